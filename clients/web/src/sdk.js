// The TypeScript SDK (clients/ts) as the browser client uses it: its built `dist/`, which
// the repository commits and esbuild bundles with the rest (its `@msgpack/msgpack` comes
// from this package's node_modules; its `ws`, for Node only, is left out by its
// package.json's `browser` field). The commitment scheme, the connection and the protocol
// are the SDK's; the views, the game as drawn and the reconnect banner are this client's.

export * from '../../ts/dist/index.js';
