//! Every message, as the types write it, conforms to the published schema
//! (`protocol/schema/messages.json`), and the schema knows each message's direction.

use elementals_protocol::conformance::{client_frame, server_frame};
use elementals_protocol::wire;

use crate::examples::{client_examples, server_examples};

#[test]
fn every_example_of_every_message_conforms_to_the_schema() {
    for msg in client_examples() {
        let bytes = wire::encode(&msg);
        client_frame(&bytes).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            server_frame(&bytes).is_err(),
            "{msg:?} is no server message"
        );
    }
    for msg in server_examples() {
        let bytes = wire::encode(&msg);
        server_frame(&bytes).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            client_frame(&bytes).is_err(),
            "{msg:?} is no client message"
        );
    }
}
