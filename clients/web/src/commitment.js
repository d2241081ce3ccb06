// Commit-reveal: the exact preimage of protocol/src/commitment.rs, hashed with Web Crypto.
//
//  offset len  field
//   0      1   len("elementals-commit-v1") = 20
//   1     20   the domain tag
//  21     16   game id, raw UUID bytes
//  37      4   round, u32 big-endian
//  41      1   seat number, 1 or 2
//  42      2   pick, u16 big-endian
//  44     32   nonce
//  76          total

export const DOMAIN_TAG = 'elementals-commit-v1';
export const NONCE_LEN = 32;
export const PREIMAGE_LEN = 1 + DOMAIN_TAG.length + 16 + 4 + 1 + 2 + NONCE_LEN;

/** The 16 bytes of a hyphenated UUID, in the order of its text form. */
export function uuidBytes(uuid) {
  const hex = uuid.replace(/-/g, '');
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new Error(`not a UUID: ${uuid}`);
  return hexToBytes(hex);
}

export function hexToBytes(hex) {
  if (hex.length % 2 !== 0) throw new Error('odd-length hex');
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function bytesToHex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** 1 for seat "one", 2 for seat "two". */
export function seatNumber(seat) {
  if (seat === 'one') return 1;
  if (seat === 'two') return 2;
  throw new Error(`not a seat: ${seat}`);
}

/** The 76 bytes that are hashed. */
export function preimage(gameId, round, seat, pick, nonce) {
  if (nonce.length !== NONCE_LEN) throw new Error(`the nonce must be ${NONCE_LEN} bytes`);
  const bytes = new Uint8Array(PREIMAGE_LEN);
  const view = new DataView(bytes.buffer);
  bytes[0] = DOMAIN_TAG.length;
  bytes.set(new TextEncoder().encode(DOMAIN_TAG), 1);
  bytes.set(uuidBytes(gameId), 21);
  view.setUint32(37, round, false);
  bytes[41] = seatNumber(seat);
  view.setUint16(42, pick, false);
  bytes.set(nonce, 44);
  return bytes;
}

/** SHA-256 of the preimage, as a Uint8Array (sent as MessagePack bin). */
export async function commitment(gameId, round, seat, pick, nonce) {
  const digest = await crypto.subtle.digest('SHA-256', preimage(gameId, round, seat, pick, nonce));
  return new Uint8Array(digest);
}

/** A fresh secret nonce for one pick. */
export function freshNonce() {
  return crypto.getRandomValues(new Uint8Array(NONCE_LEN));
}
