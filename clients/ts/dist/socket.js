// The one place that touches a WebSocket: the global one (browsers, Node 22+) or the `ws`
// package (Node 20), wrapped so that the client sees binary frames as bytes and one close.
async function webSocketClass(given) {
    if (given)
        return given;
    const global = globalThis.WebSocket;
    if (global)
        return global;
    const ws = await import('ws');
    return (ws.default ?? ws.WebSocket);
}
const OPEN = 1;
/** Opens `url` (offering `protocols`, if any) and resolves once the socket is open. */
export async function openSocket(url, given, protocols) {
    const Ctor = await webSocketClass(given);
    const ws = protocols && protocols.length > 0 ? new Ctor(url, protocols) : new Ctor(url);
    ws.binaryType = 'arraybuffer';
    let closed = false;
    let closeCode = 0;
    let lastReceived = Date.now();
    const socket = {
        onmessage: () => { },
        onclose: () => { },
        get closed() { return closed; },
        get closeCode() { return closeCode; },
        get lastReceived() { return lastReceived; },
        send(data) {
            if (ws.readyState !== OPEN)
                throw new Error('not open');
            ws.send(data);
        },
        close(code) { ws.close(code); },
        drop() {
            if (ws.terminate) {
                ws.terminate();
                return;
            }
            // A browser's socket reports its close only once the closing handshake is over, which
            // a stalled network never finishes: the socket is let go and its close reported now.
            ws.onmessage = null;
            ws.onclose = null;
            ws.onerror = null;
            ws.close(3000, 'dropped');
            if (!closed) {
                closed = true;
                closeCode = 1006;
                socket.onclose(1006);
            }
        },
    };
    await new Promise((resolve, reject) => {
        ws.onopen = () => resolve();
        ws.onerror = () => reject(new Error(`could not connect to ${url}`));
        ws.onclose = (ev) => reject(new Error(`could not connect to ${url} (${ev.code})`));
    });
    ws.onerror = () => { };
    lastReceived = Date.now();
    ws.onmessage = (ev) => {
        lastReceived = Date.now();
        if (ev.data instanceof ArrayBuffer)
            socket.onmessage(new Uint8Array(ev.data));
    };
    ws.onclose = (ev) => {
        closed = true;
        closeCode = ev.code;
        socket.onclose(ev.code);
    };
    return socket;
}
