//! The server's JSON API (the leaderboard) over HTTP or HTTPS, through reqwest with rustls.
//!
//! Responses are read under a size cap: a leaderboard is a few kilobytes, and a server
//! (or something posing as one) cannot make the client hold more than the cap.

use serde::Deserialize;

use crate::error::ClientError;
use crate::tls::TlsRoots;
use crate::url::ServerUrl;

/// Largest response read: a leaderboard is a few kilobytes.
const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// A response's status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// An HTTP client for one server's API.
#[derive(Debug, Clone)]
pub struct Http {
    client: reqwest::Client,
    base: String,
}

impl Http {
    /// A client for `server`, trusting `roots` when the address is `https://`.
    pub fn new(server: &ServerUrl, roots: &TlsRoots) -> Result<Http, ClientError> {
        let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
        if server.is_tls() {
            builder = builder.use_preconfigured_tls(roots.client_config()?);
        }
        Ok(Http {
            client: builder.build()?,
            base: server.http_base(),
        })
    }

    /// `GET path`; any status is returned, only transport errors and a body over the cap
    /// fail.
    pub async fn get(&self, path: &str) -> Result<Response, ClientError> {
        let mut response = self
            .client
            .get(format!("{}{path}", self.base))
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(ClientError::Http("response too large".into()));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Response { status, body })
    }

    /// `GET /api/leaderboard`, best first.
    pub async fn leaderboard(&self) -> Result<Vec<LeaderboardEntry>, ClientError> {
        let response = self.get("/api/leaderboard").await?;
        if response.status != 200 {
            return Err(ClientError::Http(format!(
                "leaderboard answered {}",
                response.status
            )));
        }
        parse_leaderboard(&response.body)
    }
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

/// Fetch `GET /api/leaderboard`, best first, trusting webpki's roots over `https://`.
pub async fn leaderboard(server: &ServerUrl) -> Result<Vec<LeaderboardEntry>, ClientError> {
    Http::new(server, &TlsRoots::default())?.leaderboard().await
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
