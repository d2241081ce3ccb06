//! The names serde's derive gives the message enums: every message `type`, and the fields
//! of each type whose enum refuses unknown fields. `wire` sorts a refused frame into
//! `unknown_type` or `unknown_field` by them.
//!
//! They are read once from the derive itself, through the `expected` lists it hands
//! `unknown_variant` and `unknown_field` when it meets a name it does not know, so they
//! cannot drift from the enums.

use std::fmt;
use std::sync::OnceLock;

use serde::de::value::MapDeserializer;
use serde::Deserialize;

use crate::messages::{ClientMsg, ServerMsg};

/// A message enum whose names [`Names`] holds.
pub(crate) trait Message: serde::de::DeserializeOwned {
    fn names() -> &'static Names;
}

impl Message for ClientMsg {
    fn names() -> &'static Names {
        static NAMES: OnceLock<Names> = OnceLock::new();
        NAMES.get_or_init(Names::of::<ClientMsg>)
    }
}

impl Message for ServerMsg {
    fn names() -> &'static Names {
        static NAMES: OnceLock<Names> = OnceLock::new();
        NAMES.get_or_init(Names::of::<ServerMsg>)
    }
}

/// One message enum's names.
#[derive(Debug)]
pub(crate) struct Names {
    /// Each type, with its fields when the enum refuses unknown ones.
    types: Vec<(&'static str, Option<&'static [&'static str]>)>,
}

impl Names {
    fn of<T: for<'de> Deserialize<'de>>() -> Names {
        let Probe::Variants(types) = probe::<T>(NO_NAME) else {
            unreachable!("a message enum refuses an unknown `type` with its variants")
        };
        let types = types
            .iter()
            .map(|&name| match probe::<T>(name) {
                Probe::Fields(fields) => (name, Some(fields)),
                _ => (name, None),
            })
            .collect();
        Names { types }
    }

    /// Every type, with its fields when the enum refuses unknown ones (the schema's tests
    /// hold the schema to them).
    #[cfg(test)]
    pub(crate) fn types(&self) -> &[(&'static str, Option<&'static [&'static str]>)] {
        &self.types
    }

    /// Whether `name` is a message type.
    pub(crate) fn has_type(&self, name: &str) -> bool {
        self.types.iter().any(|(known, _)| *known == name)
    }

    /// Whether `field` is unknown to the type `name`; `false` when the enum accepts
    /// unknown fields.
    pub(crate) fn is_unknown_field(&self, name: &str, field: &str) -> bool {
        self.types.iter().any(|(known, fields)| {
            *known == name
                && fields.is_some_and(|fields| field != "type" && !fields.contains(&field))
        })
    }
}

/// A key and a type no message has: a NUL is in no Rust identifier.
const NO_NAME: &str = "\0";

/// Decode `{type: name, "\0": ""}` into `T`, keeping what serde's derive expected.
fn probe<T: for<'de> Deserialize<'de>>(name: &'static str) -> Probe {
    let entries = [("type", name), (NO_NAME, "")];
    match T::deserialize(MapDeserializer::<_, Probe>::new(entries.into_iter())) {
        Ok(_) => Probe::Other,
        Err(found) => found,
    }
}

/// The error type of the probe: what serde's derive reported.
#[derive(Debug)]
enum Probe {
    Variants(&'static [&'static str]),
    Fields(&'static [&'static str]),
    Other,
}

impl serde::de::Error for Probe {
    fn custom<M: fmt::Display>(_: M) -> Probe {
        Probe::Other
    }

    fn unknown_variant(_: &str, expected: &'static [&'static str]) -> Probe {
        Probe::Variants(expected)
    }

    fn unknown_field(_: &str, expected: &'static [&'static str]) -> Probe {
        Probe::Fields(expected)
    }
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for Probe {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_derive_names_every_type_and_the_client_fields() {
        let client = ClientMsg::names();
        assert!(client.has_type("hello") && client.has_type("ping"));
        assert!(!client.has_type("pong"));
        assert!(!client.is_unknown_field("hello", "protocol_version"));
        assert!(!client.is_unknown_field("ping", "type"));
        assert!(client.is_unknown_field("ping", "colour"));
        let server = ServerMsg::names();
        assert!(server.has_type("pong") && !server.has_type("ping"));
        assert!(
            !server.is_unknown_field("pong", "colour"),
            "servers may add fields"
        );
    }
}
