//! Plain HTTP/1.1 over loopback for the tests: a GET, one that tolerates a server not
//! listening yet, a wait for a path's status, and the `/metrics`, `/api/players` and
//! `/api/games` reads every harness makes.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{until, WAIT};

/// A minimal HTTP/1.1 GET over loopback.
pub async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    get(addr, path, "").await
}

/// `http_get` with `Authorization: Bearer <token>`.
pub async fn http_get_bearer(addr: SocketAddr, path: &str, token: &str) -> (u16, String) {
    get(addr, path, &format!("Authorization: Bearer {token}\r\n")).await
}

async fn get(addr: SocketAddr, path: &str, headers: &str) -> (u16, String) {
    let failed = |what: &dyn std::fmt::Display| -> ! { panic!("GET {path} at {addr}: {what}") };
    let mut stream = TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| failed(&e));
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Connection: close\r\n\r\n");
    stream
        .write_all(req.as_bytes())
        .await
        .unwrap_or_else(|e| failed(&e));
    let mut buf = Vec::new();
    stream
        .read_to_end(&mut buf)
        .await
        .unwrap_or_else(|e| failed(&e));
    let text = String::from_utf8_lossy(&buf).to_string();
    let status: u16 = text
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| failed(&format!("no status line in {text:?}")));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    // Bodies from axum's Json are sent with content-length here; chunked would need decoding.
    (status, body)
}

/// A GET that reports a refused connection (a server or nginx not listening yet) instead
/// of panicking; the text is the whole response, head included.
pub async fn try_get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr).await?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(req.as_bytes()).await?;
    let mut buf = Vec::new();
    stream.read_to_end(&mut buf).await?;
    let text = String::from_utf8_lossy(&buf);
    let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    Ok((status, text.to_string()))
}

/// Polls `path` on `addr` until it answers `status` (`/healthz` turning 503 or back, a
/// reconnection made on a timer: nothing to wait on but the answer); fails after `WAIT`.
pub async fn until_status(addr: SocketAddr, path: &str, status: u16) {
    until(
        format!("{path} answers {status}"),
        WAIT,
        async || match http_get(addr, path).await {
            (now, _) if now == status => Ok(()),
            (now, body) => Err(format!("{now} {body}")),
        },
    )
    .await;
}

/// A counter or gauge of `addr`'s `/metrics`.
pub async fn metric_at(addr: SocketAddr, name: &str) -> u64 {
    let (status, body) = http_get(addr, "/metrics").await;
    assert_eq!(status, 200);
    body.lines()
        .find_map(|line| {
            line.strip_prefix(name)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no metric {name} in {body}"))
}

/// `GET /api/players/{name}` on `addr`, as JSON.
pub async fn player_at(addr: SocketAddr, name: &str) -> serde_json::Value {
    let (status, body) = http_get(addr, &format!("/api/players/{name}")).await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// A player's (wins, losses), from `GET /api/players/{name}` on `addr`.
pub async fn wins_and_losses_at(addr: SocketAddr, name: &str) -> (u64, u64) {
    let page = player_at(addr, name).await;
    let count = |k: &str| page[k].as_u64().unwrap_or_else(|| panic!("{k} in {page}"));
    (count("wins"), count("losses"))
}

/// `GET /api/games/{id}` on `addr`, as JSON: a finished game's record.
pub async fn game_record_at(addr: SocketAddr, id: impl std::fmt::Display) -> serde_json::Value {
    let (status, body) = http_get(addr, &format!("/api/games/{id}")).await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}
