//! The structure walk over untrusted bytes: one pass, no allocation, a fixed array for
//! the open containers. It enforces the size and depth caps, checks every declared length
//! against the bytes present, requires string keys and a string top-level `type`, refuses
//! trailing bytes, and notes the `type` and the `id` for decoding to use.

use crate::messages::RequestId;

use super::{DecodeError, MAX_DEPTH};

/// The keys of a frame [`walk`] has passed (a map with string keys, lengths checked).
pub(super) fn top_level_keys(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut cursor = Cursor { bytes, pos: 0 };
    let mut entries = cursor.skip_value().unwrap_or(0) / 2;
    std::iter::from_fn(move || {
        if entries == 0 {
            return None;
        }
        entries -= 1;
        let start = cursor.pos;
        cursor.skip_value().ok()?;
        let key = str_payload(&bytes[start..cursor.pos])?;
        // The value, with everything nested in it.
        let mut left = 1u64;
        while left > 0 {
            left = left - 1 + cursor.skip_value().ok()?;
        }
        Some(key)
    })
}

/// The bytes of each element of the MessagePack array spanning exactly `bytes`, in order
/// (each element's own structure is for the caller to check).
pub(super) fn array_elements(bytes: &[u8]) -> Result<Vec<&[u8]>, DecodeError> {
    let mut cursor = Cursor { bytes, pos: 0 };
    let count = match bytes.first() {
        Some(0x90..=0x9f | 0xdc | 0xdd) => cursor.skip_value()?,
        Some(&marker) => return Err(DecodeError::InvalidMarker(marker)),
        None => return Err(DecodeError::Truncated),
    };
    // Every element takes at least one byte: a count beyond what is left is a lie.
    if count > cursor.remaining() as u64 {
        return Err(DecodeError::Truncated);
    }
    let mut elements = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let start = cursor.pos;
        // The element, with everything nested in it.
        let mut left = 1u64;
        while left > 0 {
            left = left - 1 + cursor.skip_value()?;
        }
        elements.push(&bytes[start..cursor.pos]);
    }
    match cursor.remaining() {
        0 => Ok(elements),
        n => Err(DecodeError::TrailingBytes(n)),
    }
}

/// Walk one MessagePack value spanning exactly `bytes`, without allocating.
pub fn check_structure(bytes: &[u8], limit: usize) -> Result<(), DecodeError> {
    walk(bytes, limit)?.checked().map(drop)
}

/// What [`walk`] learnt of a well-formed frame.
pub(super) struct Walked<'a> {
    /// The first top-level `type`'s payload, if there is one.
    pub(super) tag: Option<&'a [u8]>,
    /// A top-level `type` that is not a string: the frame is refused, but only once its
    /// `id` is known, so that the refusal can answer it.
    bad_tag: bool,
    /// The top-level `id`.
    pub(super) id: FoundId,
}

impl Walked<'_> {
    /// The frame, if its `type` is a string (a key's walk is over by then).
    pub(super) fn checked(self) -> Result<Self, DecodeError> {
        match self.bad_tag {
            true => Err(DecodeError::NotAMap),
            false => Ok(self),
        }
    }
}

/// The top-level `id` as far as the walk has seen.
#[derive(Clone, Copy)]
pub(super) enum FoundId {
    None,
    /// One `id`, a u32.
    One(RequestId),
    /// One `id` that is not a u32, or more than one: no request can be told apart.
    Unreadable,
}

impl FoundId {
    pub(super) fn read(self) -> Option<RequestId> {
        match self {
            FoundId::One(id) => Some(id),
            FoundId::None | FoundId::Unreadable => None,
        }
    }

    /// `raw` (one whole value) seen as the value of a top-level `id`.
    fn saw(self, raw: &[u8]) -> FoundId {
        match (
            self,
            int_payload(raw).and_then(|n| RequestId::try_from(n).ok()),
        ) {
            (FoundId::None, Some(id)) => FoundId::One(id),
            _ => FoundId::Unreadable,
        }
    }
}

/// [`check_structure`], returning what decoding needs to know.
pub(super) fn walk(bytes: &[u8], limit: usize) -> Result<Walked<'_>, DecodeError> {
    if bytes.len() > limit {
        return Err(DecodeError::TooLarge {
            size: bytes.len(),
            limit,
        });
    }
    match bytes.first() {
        Some(&m) if is_map_marker(m) => {}
        Some(_) => return Err(DecodeError::NotAMap),
        None => return Err(DecodeError::Truncated),
    }
    let mut cursor = Cursor { bytes, pos: 0 };
    // Values still to read at each open container level (the first `depth` of them);
    // iterative, in a fixed array, so that depth costs neither stack nor allocation. The
    // root is a pseudo-level holding the one top-level value.
    let mut pending = [Level {
        left: 0,
        map: false,
    }; MAX_DEPTH];
    pending[0].left = 1;
    let mut depth = 1;
    // Keys must be strings and the top-level `type` must name its variant: serde would
    // otherwise take an integer key or tag as a field or variant *index*, making the
    // declaration order of our enums an accidental part of the wire format.
    let mut type_value_next = false;
    let mut tag = None;
    let mut bad_tag = false;
    let mut id_value_next = false;
    let mut id = FoundId::None;
    while depth > 0 {
        let level = &mut pending[depth - 1];
        if level.left == 0 {
            depth -= 1;
            continue;
        }
        let is_key = level.map && level.left % 2 == 0;
        level.left -= 1;
        let in_top_map = depth == 2;
        let start = cursor.pos;
        let children = cursor.skip_value()?;
        let raw = &bytes[start..cursor.pos];
        if std::mem::take(&mut id_value_next) {
            id = id.saw(raw);
        }
        if std::mem::take(&mut type_value_next) {
            // Not a string: refused once the walk is over (`Walked::checked`), so that the
            // refusal can name the frame's `id`.
            match str_payload(raw) {
                Some(text) => tag = tag.or(Some(text)),
                None => bad_tag = true,
            }
        } else if is_key {
            let Some(text) = str_payload(raw) else {
                return Err(DecodeError::InvalidMarker(bytes[start]));
            };
            type_value_next = in_top_map && text == b"type";
            id_value_next = in_top_map && text == b"id";
        }
        if children > 0 {
            if depth >= MAX_DEPTH {
                return Err(DecodeError::TooDeep);
            }
            // Every value takes at least one byte: a count beyond what is left is a lie.
            if children > cursor.remaining() as u64 {
                return Err(DecodeError::Truncated);
            }
            pending[depth] = Level {
                left: children,
                map: is_map_marker(bytes[start]),
            };
            depth += 1;
        }
    }
    match cursor.remaining() {
        0 => Ok(Walked { tag, bad_tag, id }),
        n => Err(DecodeError::TrailingBytes(n)),
    }
}

/// One open container while walking a frame.
#[derive(Clone, Copy)]
struct Level {
    /// Child values still to read (a map's entries count twice: key and value).
    left: u64,
    /// Whether it is a map, whose even-numbered children are keys.
    map: bool,
}

fn is_map_marker(marker: u8) -> bool {
    (0x80..=0x8f).contains(&marker) || marker == 0xde || marker == 0xdf
}

/// The payload of one already length-checked MessagePack string, or `None` if `raw` is
/// not a string.
fn str_payload(raw: &[u8]) -> Option<&[u8]> {
    let header = match *raw.first()? {
        0xa0..=0xbf => 1,
        0xd9 => 2,
        0xda => 3,
        0xdb => 5,
        _ => return None,
    };
    raw.get(header..)
}

/// The value of one MessagePack integer (`raw` is the whole value), if it is one and is
/// not negative.
fn int_payload(raw: &[u8]) -> Option<u64> {
    let (&marker, rest) = raw.split_first()?;
    let be = |n: usize| {
        let bytes = rest.get(..n)?;
        Some(bytes.iter().fold(0u64, |acc, b| (acc << 8) | *b as u64))
    };
    let signed = |n: usize| {
        let value = be(n)?;
        let bits = 8 * n as u32;
        // Negative when its top bit is set.
        (value >> (bits - 1) == 0).then_some(value)
    };
    match marker {
        0x00..=0x7f => Some(marker as u64),
        0xcc => be(1),
        0xcd => be(2),
        0xce => be(4),
        0xcf => be(8),
        0xd0 => signed(1),
        0xd1 => signed(2),
        0xd2 => signed(4),
        0xd3 => signed(8),
        _ => None,
    }
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn take(&mut self, n: u64) -> Result<&[u8], DecodeError> {
        if n > self.remaining() as u64 {
            return Err(DecodeError::Truncated);
        }
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.bytes[start..self.pos])
    }

    fn be(&mut self, n: u64) -> Result<u64, DecodeError> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | *b as u64))
    }

    /// Skip one value's own bytes; return how many child values follow it (for
    /// containers: array elements, or twice the map's entries).
    fn skip_value(&mut self) -> Result<u64, DecodeError> {
        let marker = self.take(1)?[0];
        let skip = |c: &mut Self, n: u64| c.take(n).map(|_| 0);
        match marker {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => Ok(0),
            0x80..=0x8f => Ok(2 * (marker & 0x0f) as u64),
            0x90..=0x9f => Ok((marker & 0x0f) as u64),
            0xa0..=0xbf => skip(self, (marker & 0x1f) as u64),
            0xc4 | 0xd9 => {
                let n = self.be(1)?;
                skip(self, n)
            }
            0xc5 | 0xda => {
                let n = self.be(2)?;
                skip(self, n)
            }
            0xc6 | 0xdb => {
                let n = self.be(4)?;
                skip(self, n)
            }
            0xc7 => {
                let n = self.be(1)?;
                skip(self, n + 1)
            }
            0xc8 => {
                let n = self.be(2)?;
                skip(self, n + 1)
            }
            0xc9 => {
                let n = self.be(4)?;
                skip(self, n + 1)
            }
            0xca => skip(self, 4),
            0xcb => skip(self, 8),
            0xcc | 0xd0 => skip(self, 1),
            0xcd | 0xd1 => skip(self, 2),
            0xce | 0xd2 => skip(self, 4),
            0xcf | 0xd3 => skip(self, 8),
            0xd4 => skip(self, 2),
            0xd5 => skip(self, 3),
            0xd6 => skip(self, 5),
            0xd7 => skip(self, 9),
            0xd8 => skip(self, 17),
            0xdc => self.be(2),
            0xdd => self.be(4),
            0xde => Ok(2 * self.be(2)?),
            0xdf => Ok(2 * self.be(4)?),
            0xc1 => Err(DecodeError::InvalidMarker(marker)),
        }
    }
}
