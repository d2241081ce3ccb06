//! Decoding the message enums without serde's buffering of internally tagged enums.
//!
//! On the wire a message is one map whose `type` key names its variant, anywhere among
//! the other keys. serde's derived `Deserialize` for such an enum cannot know the variant
//! before it has read the whole map, so it first copies every key and value into a
//! buffer of its own (`Content`) and then decodes the variant from that copy: two passes
//! and an allocation per string. That was a fifth of the load generator's CPU and a few
//! per cent of the server's (BENCHMARKS.md §2, server R).
//!
//! [`crate::wire`] has already walked the frame (`check_structure`) and found the `type`
//! value there. So each message enum also has a twin, declared by the `messages!` macro
//! from the same variant list, that serde derives as an ordinary (externally tagged)
//! enum. [`TaggedBody`] presents the frame to the twin as that enum: the variant is the
//! `type` already found, and its fields are the map's other entries, read once, straight
//! from the frame. The `type` entry itself is skipped where it stands; a second one (the
//! walk says whether there is one) is refused as a duplicate field once the first is
//! known to name a message, in the order serde's own derive refuses them.
//!
//! Errors keep serde's wording (`unknown variant`, `unknown field`, `missing field`),
//! which `wire` sorts into error codes. The verdicts are serde's derive's, which
//! `wire::decode` still uses: a property test compares the two (`tests/wire.rs`), and a
//! frame with a bin anywhere but `commitment` or `nonce` is left to the derive, because
//! rmp-serde reads a bin where a struct or a sequence is due as a sequence of its bytes.

use std::fmt;

use serde::de::value::{BorrowedBytesDeserializer, BorrowedStrDeserializer};
use serde::de::{
    DeserializeSeed, Deserializer, EnumAccess, Error, IgnoredAny, IntoDeserializer, MapAccess,
    VariantAccess, Visitor,
};

/// A message enum that `wire` decodes from a frame whose `type` it has found.
pub trait Tagged: serde::de::DeserializeOwned {
    /// Decode the variant `frame` names.
    fn deserialize_tagged<'de, D: Deserializer<'de>>(
        frame: TaggedBody<'_, D>,
    ) -> Result<Self, D::Error>;
}

/// Declares a message enum, internally tagged by `type` on the wire, and the twin that
/// decodes it through [`TaggedBody`]. Every variant is a struct variant. The twin gets
/// the same fields with the same attributes; its own container attributes are given
/// after `decoded by`: they must be the enum's, with `remote` for `tag`.
macro_rules! messages {
    (
        $(#[$meta:meta])*
        pub enum $name:ident;
        decoded by #[$twin_meta:meta] $twin:ident;
        {
            $(
                $(#[$variant_meta:meta])*
                $variant:ident { $( $(#[$field_meta:meta])* $field:ident : $ty:ty ),* $(,)? }
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $(
                $(#[$variant_meta])*
                $variant { $( $(#[$field_meta])* $field: $ty ),* },
            )*
        }

        /// The decoding twin of the enum of the same variants (`tagged.rs`). Never
        /// constructed: serde's `remote` derive builds the real enum's variants.
        #[derive(serde::Deserialize)]
        #[$twin_meta]
        #[allow(dead_code)]
        enum $twin {
            $( $variant { $( $(#[$field_meta])* $field: $ty ),* }, )*
        }

        impl $crate::tagged::Tagged for $name {
            fn deserialize_tagged<'de, D: serde::Deserializer<'de>>(
                frame: $crate::tagged::TaggedBody<'_, D>,
            ) -> Result<Self, D::Error> {
                $twin::deserialize(frame)
            }
        }
    };
}
pub(crate) use messages;

/// A frame presented as an externally tagged enum: variant `tag`, fields the frame's
/// entries other than `type`.
pub struct TaggedBody<'t, D> {
    tag: &'t str,
    /// The frame has a second `type`: refused once the first is known to name a variant.
    again: bool,
    frame: D,
}

impl<'t, D> TaggedBody<'t, D> {
    pub fn new(tag: &'t str, again: bool, frame: D) -> Self {
        TaggedBody { tag, again, frame }
    }
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for TaggedBody<'_, D> {
    type Error = D::Error;

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        visitor.visit_enum(self)
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, D::Error> {
        Err(D::Error::custom(
            "a tagged message decodes only as its enum",
        ))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct identifier
        ignored_any
    }
}

impl<'de, 't, D: Deserializer<'de>> EnumAccess<'de> for TaggedBody<'t, D> {
    type Error = D::Error;
    type Variant = Fields<D>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Fields<D>), D::Error> {
        let tag: serde::de::value::StrDeserializer<'t, D::Error> = self.tag.into_deserializer();
        let variant = seed.deserialize(tag)?;
        if self.again {
            return Err(D::Error::duplicate_field("type"));
        }
        Ok((variant, Fields(self.frame)))
    }
}

/// The variant's fields: the frame's map without its `type` entry.
pub struct Fields<D>(D);

impl<'de, D: Deserializer<'de>> VariantAccess<'de> for Fields<D> {
    type Error = D::Error;

    fn unit_variant(self) -> Result<(), D::Error> {
        Err(D::Error::custom("every message is a struct variant"))
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _seed: T) -> Result<T::Value, D::Error> {
        Err(D::Error::custom("every message is a struct variant"))
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, D::Error> {
        Err(D::Error::custom("every message is a struct variant"))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(WithoutTag(visitor))
    }
}

/// Hands the variant's visitor the map with its `type` entry skipped.
struct WithoutTag<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for WithoutTag<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(SkipTag { map })
    }
}

struct SkipTag<A> {
    map: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for SkipTag<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key_seed(KeySeed)? else {
                return Ok(None);
            };
            let field = match key {
                Key::Str(name) if name != "type" => {
                    seed.deserialize(BorrowedStrDeserializer::new(name))
                }
                Key::String(name) if name != "type" => seed.deserialize(name.into_deserializer()),
                Key::Bytes(raw) => seed.deserialize(BorrowedBytesDeserializer::new(raw)),
                // The `type` entry: the variant already (`TaggedBody` refused a second one).
                Key::Str(_) | Key::String(_) => {
                    self.map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            return field.map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A map key as the frame holds it: borrowed from the frame where the decoder allows,
/// bytes where it is not UTF-8 (`check_structure` lets only strings be keys).
enum Key<'de> {
    Str(&'de str),
    String(String),
    Bytes(&'de [u8]),
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key<'de>, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key::Str(v))
    }

    fn visit_str<E: Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key::String(v.to_owned()))
    }

    fn visit_borrowed_bytes<E: Error>(self, v: &'de [u8]) -> Result<Key<'de>, E> {
        Ok(Key::Bytes(v))
    }

    fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Key<'de>, E> {
        Ok(Key::String(String::from_utf8_lossy(v).into_owned()))
    }
}
