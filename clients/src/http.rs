//! A minimal HTTP/1.1 GET over a plain TCP stream, enough to read the server's JSON API
//! (the leaderboard) without pulling in an HTTP client stack.
//!
//! One request per connection (`Connection: close`), no TLS, no redirects. The response
//! is read to the end under a size cap; bodies may be sized by `Content-Length`, chunked,
//! or delimited by the close.

use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::ClientError;
use crate::url::ServerUrl;

/// Largest response read: a leaderboard is a few kilobytes.
const MAX_RESPONSE_BYTES: u64 = 4 * 1024 * 1024;

/// A response's status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// `GET path` from the server; any status is returned, only I/O and framing fail.
pub async fn get(server: &ServerUrl, path: &str) -> Result<Response, ClientError> {
    let mut stream =
        TcpStream::connect((server.host().trim_matches(['[', ']']), server.port())).await?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
        server.authority()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::new();
    stream
        .take(MAX_RESPONSE_BYTES + 1)
        .read_to_end(&mut raw)
        .await?;
    if raw.len() as u64 > MAX_RESPONSE_BYTES {
        return Err(ClientError::Http("response too large".into()));
    }
    parse_response(&raw)
}

/// Parse a complete HTTP/1.1 response.
pub fn parse_response(raw: &[u8]) -> Result<Response, ClientError> {
    let bad = |what: &str| ClientError::Http(what.to_owned());
    let split = find(raw, b"\r\n\r\n").ok_or_else(|| bad("no end of headers"))?;
    let head = std::str::from_utf8(&raw[..split]).map_err(|_| bad("headers are not UTF-8"))?;
    let rest = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let (version, code) = (parts.next(), parts.next());
    if !version.is_some_and(|v| v.starts_with("HTTP/1.")) {
        return Err(bad("not an HTTP/1 response"));
    }
    let status = code
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| bad("bad status code"))?;
    let mut length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad("malformed header"));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| bad("bad content-length"))?,
            );
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        }
    }
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(length) = length {
        rest.get(..length)
            .ok_or_else(|| bad("body shorter than content-length"))?
            .to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response { status, body })
}

/// Decode a chunked body (chunk extensions and trailers are ignored).
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, ClientError> {
    let bad = |what: &str| ClientError::Http(what.to_owned());
    let mut body = Vec::new();
    loop {
        let end = find(rest, b"\r\n").ok_or_else(|| bad("truncated chunk size"))?;
        let size_text = std::str::from_utf8(&rest[..end]).map_err(|_| bad("bad chunk size"))?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| bad("bad chunk size"))?;
        rest = &rest[end + 2..];
        if size == 0 {
            return Ok(body);
        }
        let chunk = rest.get(..size).ok_or_else(|| bad("truncated chunk"))?;
        body.extend_from_slice(chunk);
        rest = rest
            .get(size..)
            .and_then(|r| r.strip_prefix(b"\r\n"))
            .ok_or_else(|| bad("chunk without its line end"))?;
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// One row of the leaderboard. Fields the server does not send are `None`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LeaderboardEntry {
    pub name: String,
    pub rating: f64,
    #[serde(default)]
    pub wins: Option<u32>,
    #[serde(default)]
    pub losses: Option<u32>,
    #[serde(default)]
    pub draws: Option<u32>,
}

/// Fetch `GET /api/leaderboard`, best first.
pub async fn leaderboard(server: &ServerUrl) -> Result<Vec<LeaderboardEntry>, ClientError> {
    let response = get(server, "/api/leaderboard").await?;
    if response.status != 200 {
        return Err(ClientError::Http(format!(
            "leaderboard answered {}",
            response.status
        )));
    }
    parse_leaderboard(&response.body)
}

/// The leaderboard from JSON: either a bare array of entries, or an object holding the
/// array under `leaderboard`, `players` or `entries`.
pub fn parse_leaderboard(json: &[u8]) -> Result<Vec<LeaderboardEntry>, ClientError> {
    let value: serde_json::Value = serde_json::from_slice(json)?;
    let list = match value {
        serde_json::Value::Object(mut map) => ["leaderboard", "players", "entries"]
            .iter()
            .find_map(|key| map.remove(*key))
            .ok_or_else(|| ClientError::Http("no leaderboard array in the response".into()))?,
        other => other,
    };
    Ok(serde_json::from_value(list)?)
}

/// The leaderboard as an aligned text table.
pub fn leaderboard_table(entries: &[LeaderboardEntry]) -> String {
    let width = entries
        .iter()
        .map(|e| e.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let num = |n: Option<u32>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
    let mut out = format!(
        "{:>4}  {:<width$}  {:>8}  {:>5}  {:>5}  {:>5}\n",
        "#", "name", "rating", "won", "lost", "drawn"
    );
    for (rank, e) in entries.iter().enumerate() {
        out.push_str(&format!(
            "{:>4}  {:<width$}  {:>8.3}  {:>5}  {:>5}  {:>5}\n",
            rank + 1,
            e.name,
            e.rating,
            num(e.wins),
            num(e.losses),
            num(e.draws)
        ));
    }
    out
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
