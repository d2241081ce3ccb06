// The protocol's messages as TypeScript types: those of `schema.ts` (generated from the JSON
// Schema the server's Rust types derive, protocol/schema/messages.json) under the short
// names the SDK uses, the request and reply maps that type `Client.request`, and the few
// narrower types the schema states as plain strings. Frames decode to plain objects; a
// server may add fields (PROTOCOL.md section 2), so these are the keys a message has at
// least. `bin` fields are Uint8Array.
export const GAME_EVENTS = new Set([
    'round_start', 'committed', 'reveal_phase', 'revealed', 'round_result',
    'draw_offered', 'draw_declined', 'presence', 'game_over', 'rating_update',
]);
