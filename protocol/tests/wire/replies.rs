//! `ServerMsg::reply_id` names the request id of every reply, as its frame carries it.

use std::collections::BTreeSet;

use elementals_protocol::wire;
use elementals_protocol::ServerMsg;
use rmpv::Value;

use crate::examples::{server_examples, server_type};
use crate::helpers::{entries, value_of};

/// The frame's `id`, if it has one that is not nil.
fn frame_id(msg: &ServerMsg) -> Option<u32> {
    let value = value_of(&wire::encode(msg));
    entries(&value)
        .iter()
        .find(|(k, _)| k.as_str() == Some("id"))
        .and_then(|(_, v)| match v {
            Value::Nil => None,
            v => Some(
                v.as_u64()
                    .and_then(|id| u32::try_from(id).ok())
                    .expect("an id is a u32"),
            ),
        })
}

#[test]
fn every_reply_names_the_id_its_frame_carries_and_nothing_else_names_one() {
    let mut replies = BTreeSet::new();
    for msg in server_examples() {
        assert_eq!(msg.reply_id(), frame_id(&msg), "{msg:?}");
        if msg.reply_id().is_some() {
            replies.insert(server_type(&msg));
        }
    }
    // Every reply type PROTOCOL.md lists, each seen answering a request.
    let expected = BTreeSet::from([
        "welcome",
        "pong",
        "ok",
        "error",
        "authenticated",
        "queued",
        "seek_created",
        "seeks",
        "challenge_sent",
        "live_games",
        "open_games",
        "counts",
        "snapshot",
    ]);
    assert_eq!(replies, expected);
}
