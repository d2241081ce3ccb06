//! Rendering frames as PROTOCOL.md shows them, and bytes as hex dumps.

use rmpv::Value;

use crate::session::{encode, Frame};

/// A JSON-like rendering of a decoded frame: keys bare, strings quoted, floats always with
/// a decimal point, bin as `bin(hex)`. A map or array that would pass column 96 from
/// `column` is spread over lines indented by `indent`.
fn render(value: &Value, indent: usize, column: usize) -> String {
    let flat = render_flat(value);
    if column + flat.len() <= 96 {
        return flat;
    }
    let pad = " ".repeat(indent + 2);
    let (open, close, items): (&str, &str, Vec<String>) = match value {
        Value::Map(entries) => (
            "{",
            "}",
            entries
                .iter()
                .map(|(k, v)| {
                    let key = k.as_str().unwrap();
                    let start = indent + 2 + key.len() + 2;
                    format!("{key}: {}", render(v, indent + 2, start))
                })
                .collect(),
        ),
        Value::Array(items) => (
            "[",
            "]",
            items
                .iter()
                .map(|v| render(v, indent + 2, indent + 2))
                .collect(),
        ),
        _ => return flat,
    };
    let mut out = format!("{open}\n");
    for item in items {
        out += &format!("{pad}{item},\n");
    }
    out + &" ".repeat(indent) + close
}

pub(crate) fn render_flat(value: &Value) -> String {
    match value {
        Value::Nil => "nil".into(),
        Value::Boolean(b) => b.to_string(),
        Value::Integer(i) => i.to_string(),
        Value::F64(f) => format!("{f:?}"),
        Value::F32(f) => format!("{f:?}"),
        Value::String(s) => format!("{:?}", s.as_str().unwrap()),
        Value::Binary(b) => format!("bin({})", hex::encode(b)),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(render_flat).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Map(entries) => {
            let entries: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", k.as_str().unwrap(), render_flat(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        Value::Ext(t, d) => format!("ext({t}, {})", hex::encode(d)),
    }
}

pub(crate) fn render_frame(frame: &Frame) -> String {
    let bytes = encode(frame);
    let value = rmpv::decode::read_value(&mut &bytes[..]).unwrap();
    let arrow = match frame {
        Frame::ToServer(_) => "→ ",
        Frame::ToClient(_) => "← ",
    };
    format!("{arrow}{}", render(&value, 0, 2))
}

/// Sixteen bytes a line, in hex, separated by spaces.
pub(crate) fn hex_dump(bytes: &[u8]) -> String {
    bytes
        .chunks(16)
        .map(|line| {
            line.iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}
