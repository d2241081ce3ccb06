import type { WebSocket as WsWebSocket } from 'ws';
/** The browser WebSocket API, as much of it as the SDK uses. */
export interface WebSocketLike {
    binaryType: string;
    readyState: number;
    send(data: Uint8Array): void;
    close(code?: number, reason?: string): void;
    onopen: ((ev: unknown) => void) | null;
    onmessage: ((ev: {
        data: unknown;
    }) => void) | null;
    onclose: ((ev: {
        code: number;
    }) => void) | null;
    onerror: ((ev: unknown) => void) | null;
    /** `ws` only: destroys the socket at once. */
    terminate?: () => void;
}
export type WebSocketClass = new (url: string, protocols?: string | string[]) => WebSocketLike;
export interface SocketLike {
    onmessage: (data: Uint8Array) => void;
    onclose: (code: number) => void;
    readonly closed: boolean;
    readonly closeCode: number;
    /** When the last frame came (`Date.now()`), or the socket opened. */
    readonly lastReceived: number;
    send(data: Uint8Array): void;
    close(code: number): void;
    drop(): void;
}
/** Opens `url` (offering `protocols`, if any) and resolves once the socket is open. */
export declare function openSocket(url: string, given?: WebSocketClass, protocols?: string[]): Promise<SocketLike>;
export type { WsWebSocket };
