//! What the JSON API (`/api/…`) puts around its reads: the bounds of a page (`?limit=` and
//! `?offset=`), the leaderboard's first page kept briefly in memory, and the per-address
//! request limit, answered 429 with `Retry-After`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::admission;
use crate::db::Page;
use crate::limits::retry_secs;
use crate::state::AppState;

/// Entries a page of the leaderboard or of the live games holds at most (and by default).
pub const MAX_LIST: u32 = 100;

/// Rating changes a player page's history holds at most (and by default).
pub const MAX_HISTORY: u32 = 200;

/// Games a page of a player's games holds at most (and by default): each is one record
/// read (its head only decoded).
pub const MAX_GAMES: u32 = 50;

/// The furthest a list may be paged into: an offset is rows read and skipped.
pub const MAX_OFFSET: u32 = 10_000;

/// `?limit=&offset=` as asked; both optional.
#[derive(Debug, Default, Clone, Copy, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    pub limit: Option<u32>,
    pub offset: Option<u32>,
}

/// An offset past [`MAX_OFFSET`]: answered 400.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("offset is at most {MAX_OFFSET}")]
pub struct OffsetTooFar;

impl IntoResponse for OffsetTooFar {
    fn into_response(self) -> Response {
        (StatusCode::BAD_REQUEST, self.to_string()).into_response()
    }
}

impl PageQuery {
    /// The page asked for, at most `max` entries (`max` when no limit is given).
    pub fn page(self, max: u32) -> Result<Page, OffsetTooFar> {
        let offset = self.offset.unwrap_or(0);
        if offset > MAX_OFFSET {
            return Err(OffsetTooFar);
        }
        Ok(Page {
            limit: self.limit.unwrap_or(max).min(max),
            offset,
        })
    }
}

/// The per-address request limit of the JSON API. The address is the TCP peer's, or
/// behind a trusted proxy the one it forwards, as for WebSockets.
pub async fn limit_requests(
    State(state): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    let client = admission::client_ip(peer.ip(), request.headers(), &state.config.trusted_proxy);
    match state.abuse.http_requests.take(client, Instant::now()) {
        Ok(()) => next.run(request).await,
        Err(wait) => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, retry_secs(wait).to_string())],
            "too many requests from this address",
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_capped_and_an_offset_bounded() {
        let q = |limit, offset| PageQuery { limit, offset };
        assert_eq!(
            q(None, None).page(100).unwrap(),
            Page {
                limit: 100,
                offset: 0
            }
        );
        assert_eq!(q(Some(1_000), Some(5)).page(100).unwrap().limit, 100);
        assert_eq!(q(Some(7), None).page(100).unwrap().limit, 7);
        assert_eq!(
            q(None, Some(MAX_OFFSET)).page(100).unwrap().offset,
            MAX_OFFSET
        );
        let refused = q(None, Some(MAX_OFFSET + 1)).page(100).unwrap_err();
        assert_eq!(refused.into_response().status(), StatusCode::BAD_REQUEST);
    }
}
