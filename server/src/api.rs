//! What the JSON API (`/api/…`) puts around its reads: the bounds of a page (`?limit=` and
//! `?offset=`), the leaderboard's first page kept briefly in memory, and the per-address
//! request limit, answered 429 with `Retry-After`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Mutex;

use crate::admission;
use crate::db::{Db, DbResult, LeaderRow, Page};
use crate::limits::retry_secs;
use crate::server::AppState;

/// The furthest a list may be paged into: an offset is rows read and skipped.
pub const MAX_OFFSET: u32 = 10_000;

/// `?limit=&offset=` as asked; both optional.
#[derive(Debug, Default, Clone, Copy, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    pub limit: Option<u32>,
    pub offset: Option<u32>,
}

impl PageQuery {
    /// The page asked for, at most `max` entries (`max` when no limit is given); an offset
    /// past [`MAX_OFFSET`] is answered 400.
    pub fn page(self, max: u32) -> Result<Page, Response> {
        let offset = self.offset.unwrap_or(0);
        if offset > MAX_OFFSET {
            return Err((
                StatusCode::BAD_REQUEST,
                format!("offset is at most {MAX_OFFSET}"),
            )
                .into_response());
        }
        Ok(Page {
            limit: self.limit.unwrap_or(max).min(max),
            offset,
        })
    }
}

/// The leaderboard's first `size` rows, read at most once per `ttl`; pages beyond them are
/// read each time. Concurrent requests for an expired copy wait for one read.
pub struct LeaderboardCache {
    ttl: Duration,
    size: u32,
    copy: Mutex<Option<(Instant, Arc<Vec<LeaderRow>>)>>,
}

impl LeaderboardCache {
    pub fn new(ttl: Duration, size: u32) -> LeaderboardCache {
        LeaderboardCache {
            ttl,
            size,
            copy: Mutex::new(None),
        }
    }

    /// The rows of `page` as of at most `ttl` ago (at `now`).
    pub async fn get(&self, db: &Db, page: Page, now: Instant) -> DbResult<Vec<LeaderRow>> {
        let end = page.offset.saturating_add(page.limit);
        if self.ttl.is_zero() || end > self.size {
            return db.leaderboard(page).await;
        }
        let mut copy = self.copy.lock().await;
        let rows = match &*copy {
            Some((at, rows)) if now.saturating_duration_since(*at) < self.ttl => Arc::clone(rows),
            _ => {
                let first = Page {
                    limit: self.size,
                    offset: 0,
                };
                let rows = Arc::new(db.leaderboard(first).await?);
                *copy = Some((now, Arc::clone(&rows)));
                rows
            }
        };
        drop(copy);
        let from = (page.offset as usize).min(rows.len());
        let to = (end as usize).min(rows.len());
        Ok(rows[from..to].to_vec())
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
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    }
}
