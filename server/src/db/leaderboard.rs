//! The leaderboard's first page, kept a moment: the page every visitor's front page asks
//! for, read from the database at most once per `--leaderboard-cache-ms`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use super::{Db, DbResult, LeaderRow, Page};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_leaderboard_is_read_again_once_its_copy_is_older_than_the_ttl() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("elementals.db")).unwrap();
        let cache = LeaderboardCache::new(Duration::from_secs(1), 100);
        let first = Page {
            limit: 100,
            offset: 0,
        };
        let t0 = Instant::now();
        db.create_account("ann".into(), "x".into()).await.unwrap();
        assert_eq!(cache.get(&db, first, t0).await.unwrap().len(), 1);
        db.create_account("bob".into(), "x".into()).await.unwrap();
        let at = |ms| t0 + Duration::from_millis(ms);
        assert_eq!(cache.get(&db, first, at(999)).await.unwrap().len(), 1);
        // A page within the copy is cut from it; one beyond it is read.
        let second = Page {
            limit: 1,
            offset: 1,
        };
        assert!(cache.get(&db, second, at(999)).await.unwrap().is_empty());
        let beyond = Page {
            limit: 100,
            offset: 1,
        };
        assert_eq!(cache.get(&db, beyond, at(999)).await.unwrap().len(), 1);
        assert_eq!(cache.get(&db, first, at(1_000)).await.unwrap().len(), 2);
        assert_eq!(cache.get(&db, second, at(1_000)).await.unwrap().len(), 1);
    }
}
