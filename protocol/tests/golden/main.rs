//! Golden bytes: the exact encoding of representative messages is pinned here, so an
//! accidental change to the wire format fails a test. The example session of PROTOCOL.md
//! is generated here too, and the document must show it exactly as generated.
//!
//! - `session`: the example session, alice against bob, played by hand as the rules say.
//! - `render`: frames rendered as PROTOCOL.md shows them, and hex dumps.
//! - `documented`: PROTOCOL.md shows the session, its bytes and the commitment vectors.
//! - `pinned`: the pinned bytes of representative frames.
//! - `quick_start`: PROTOCOL.md's quick start, and the session against the schema.

mod documented;
mod pinned;
mod quick_start;
mod render;
mod session;
