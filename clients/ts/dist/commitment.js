// The commitment scheme of PROTOCOL.md section 8: SHA-256 over a 76-byte preimage, through
// WebCrypto (in browsers and in Node 20+ as `globalThis.crypto`).
export const NONCE_LEN = 32;
const DOMAIN_TAG = new TextEncoder().encode('elementals-commit-v1');
/** The 16 bytes of a UUID, in the order of its hyphenated text. */
export function uuidBytes(gameId) {
    const hex = gameId.replaceAll('-', '');
    if (!/^[0-9a-fA-F]{32}$/.test(hex))
        throw new Error(`not a game id: ${gameId}`);
    return fromHex(hex);
}
export function toHex(bytes) {
    return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
export function fromHex(hex) {
    if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex))
        throw new Error('not hex');
    const out = new Uint8Array(hex.length / 2);
    for (let i = 0; i < out.length; i++)
        out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
    return out;
}
/** The 76 bytes a commitment hashes: tag, game id, round, own seat, pick, nonce. */
export function preimage(gameId, round, seat, pick, nonce) {
    if (nonce.length !== NONCE_LEN)
        throw new Error(`a nonce is ${NONCE_LEN} bytes, not ${nonce.length}`);
    // Callers in plain JavaScript may pass anything: a wrong value must not hash to some
    // commitment.
    if (seat !== 'one' && seat !== 'two')
        throw new Error(`a seat is 'one' or 'two', not ${String(seat)}`);
    if (!Number.isInteger(round) || round < 0 || round > 0xffff_ffff)
        throw new Error(`a round is a u32, not ${round}`);
    if (!Number.isInteger(pick) || pick < 0 || pick > 0xffff)
        throw new Error(`a pick is a u16, not ${pick}`);
    const out = new Uint8Array(1 + DOMAIN_TAG.length + 16 + 4 + 1 + 2 + NONCE_LEN);
    const view = new DataView(out.buffer);
    out[0] = DOMAIN_TAG.length;
    out.set(DOMAIN_TAG, 1);
    out.set(uuidBytes(gameId), 21);
    view.setUint32(37, round);
    out[41] = seat === 'one' ? 1 : 2;
    view.setUint16(42, pick);
    out.set(nonce, 44);
    return out;
}
/** SHA-256 of the preimage: the 32 bytes sent in `commit`. */
export async function commitment(gameId, round, seat, pick, nonce) {
    const bytes = preimage(gameId, round, seat, pick, nonce);
    return new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', bytes));
}
/** 32 bytes from the platform's CSPRNG: a predictable nonce gives the pick away. */
export function newNonce() {
    return globalThis.crypto.getRandomValues(new Uint8Array(NONCE_LEN));
}
