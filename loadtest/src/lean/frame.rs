//! The WebSocket frames the lean spectators read and write: a server's frames parsed
//! whole or not at all (never masked, never fragmented), a client's frames masked.

use elementals_client::protocol::wire::MAX_SERVER_MESSAGE_BYTES;

pub(super) const OP_BINARY: u8 = 0x2;
pub(super) const OP_CLOSE: u8 = 0x8;
pub(super) const OP_PING: u8 = 0x9;
pub(super) const OP_PONG: u8 = 0xA;

/// One whole frame at the front of a buffer: its opcode, where its payload lies and how
/// many bytes it takes.
#[derive(Debug, PartialEq, Eq)]
pub struct Frame {
    pub opcode: u8,
    pub payload: std::ops::Range<usize>,
    pub len: usize,
}

/// The frame at the front of `buf`: `Ok(None)` until it has all arrived.
pub fn parse_frame(buf: &[u8]) -> Result<Option<Frame>, &'static str> {
    let [first, second, ..] = *buf else {
        return Ok(None);
    };
    if first & 0x80 == 0 || first & 0x0F == 0 {
        return Err("spectating: fragmented server frame");
    }
    if second & 0x80 != 0 {
        return Err("spectating: masked server frame");
    }
    let (header, size) = match second & 0x7F {
        126 => match buf.get(2..4) {
            Some(b) => (4, u16::from_be_bytes([b[0], b[1]]) as u64),
            None => return Ok(None),
        },
        127 => match buf.get(2..10) {
            Some(b) => (10, u64::from_be_bytes(b.try_into().expect("8 bytes"))),
            None => return Ok(None),
        },
        n => (2, n as u64),
    };
    if size > MAX_SERVER_MESSAGE_BYTES as u64 {
        return Err("spectating: server frame too large");
    }
    let len = header + size as usize;
    if buf.len() < len {
        return Ok(None);
    }
    Ok(Some(Frame {
        opcode: first & 0x0F,
        payload: header..len,
        len,
    }))
}

/// A masked client frame.
pub(super) fn client_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(payload.len() + 8);
    frame.push(0x80 | opcode);
    match payload.len() {
        n if n < 126 => frame.push(0x80 | n as u8),
        n => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
    }
    let mask: [u8; 4] = rand::random();
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_parsed_whole_or_not_at_all() {
        let mut buf = vec![0x82, 3, 1, 2, 3, 0x89, 0];
        assert_eq!(
            parse_frame(&buf),
            Ok(Some(Frame {
                opcode: OP_BINARY,
                payload: 2..5,
                len: 5
            }))
        );
        assert_eq!(
            parse_frame(&buf[5..]),
            Ok(Some(Frame {
                opcode: OP_PING,
                payload: 2..2,
                len: 2
            }))
        );
        assert_eq!(parse_frame(&buf[..4]), Ok(None));
        assert_eq!(parse_frame(&buf[..1]), Ok(None));
        // A 300-byte payload: a 16-bit length.
        buf = vec![0x82, 126, 1, 44];
        assert_eq!(parse_frame(&buf), Ok(None));
        buf.resize(4 + 300, 7);
        assert_eq!(parse_frame(&buf).unwrap().unwrap().payload, 4..304);
    }

    #[test]
    fn frames_a_server_must_not_send_are_refused() {
        assert!(parse_frame(&[0x02, 1, 0]).is_err(), "not final");
        assert!(parse_frame(&[0x80, 1, 0]).is_err(), "a continuation");
        assert!(parse_frame(&[0x82, 0x81, 0, 0, 0, 0, 0]).is_err(), "masked");
        let huge = (MAX_SERVER_MESSAGE_BYTES as u64 + 1).to_be_bytes();
        let mut frame = vec![0x82, 127];
        frame.extend_from_slice(&huge);
        assert!(parse_frame(&frame).is_err(), "too large");
    }

    #[test]
    fn client_frames_are_masked_and_unmask_to_the_payload() {
        let payload: Vec<u8> = (0..200u8).collect();
        let frame = client_frame(OP_BINARY, &payload);
        assert_eq!(frame[0], 0x82);
        assert_eq!(frame[1], 0x80 | 126);
        assert_eq!(u16::from_be_bytes([frame[2], frame[3]]), 200);
        let mask = &frame[4..8];
        let unmasked: Vec<u8> = frame[8..]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect();
        assert_eq!(unmasked, payload);
        let short = client_frame(OP_PONG, b"hi");
        assert_eq!(&short[..2], &[0x8A, 0x82]);
        assert_eq!(short.len(), 2 + 4 + 2);
    }
}
