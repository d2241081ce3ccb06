//! Accounts and sessions over time: guest names that do not run out, the cap on an
//! account's sessions, pruning at a chosen time, and pages read beside a busy writer.

use std::collections::HashSet;
use std::time::Duration;

use elementals_protocol::messages::EndReason;
use rand::SeedableRng;

use super::tests::{count, game, open_both, open_db, register, side_connection, TestDb, KEEP};
use super::*;
use crate::pruning::{pass, PRUNE_BATCH, SESSION_GRACE};
use crate::record::AccountId;
use crate::registry::Registry;

const DAY: u64 = 24 * 3600 * 1000;
const RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Sets an account's creation time (Unix ms), as if it had been created then.
async fn created_at(t: &TestDb, account: AccountId, at: u64) {
    t.db.flush().await.unwrap();
    side_connection(&t.path)
        .execute(
            "UPDATE accounts SET created_at = ?1 WHERE id = ?2",
            rusqlite::params![at as i64, account],
        )
        .unwrap();
}

async fn exists(t: &TestDb, account: AccountId) -> bool {
    t.db.account_by_id(account).await.unwrap().is_some()
}

#[test]
fn guest_names_keep_the_name_rules_and_draw_fifty_bits() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut symbols = HashSet::new();
    for _ in 0..1_000 {
        let name = accounts::guest_name(&mut rng);
        assert!((crate::auth::NAME_MIN..=crate::auth::NAME_MAX).contains(&name.len()));
        assert!(name.starts_with("guest-"), "{name}");
        assert!(
            name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'),
            "{name}"
        );
        symbols.extend(name[6..].chars());
    }
    assert_eq!(name_len(), 16);
    // Every one of the 32 symbols turns up: ten of them are 50 bits.
    assert_eq!(symbols.len(), 32);

    fn name_len() -> usize {
        accounts::guest_name(&mut rand::rng()).len()
    }
}

#[tokio::test]
async fn guests_still_sign_in_when_a_million_guest_names_are_taken() {
    let t = open_db();
    // Every name of the form a six-digit space would draw from is taken.
    t.db.flush().await.unwrap();
    side_connection(&t.path)
        .execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999999)
             INSERT INTO accounts (name, guest, created_at)
             SELECT printf('guest-%06d', i), 1, 0 FROM n;",
        )
        .unwrap();
    for _ in 0..20 {
        let guest = t.db.create_guest().await.unwrap();
        assert!(guest.guest);
    }
    assert_eq!(count(&t.path, "accounts"), 1_000_020);
}

#[tokio::test]
async fn a_sign_in_past_the_session_cap_revokes_the_oldest() {
    for t in open_both() {
        let ann = register(&t.db, "ann").await;
        let bob = register(&t.db, "bob").await;
        t.db.insert_session([200; 32], bob.id, u64::MAX / 2, 3)
            .await
            .unwrap();
        for n in 0..5u8 {
            t.db.insert_session([n; 32], ann.id, u64::MAX / 2, 3)
                .await
                .unwrap();
        }
        for n in 0..5u8 {
            let alive = t.db.session([n; 32], 0, KEEP).await.unwrap().is_some();
            assert_eq!(alive, n >= 2, "session {n}");
        }
        // Another account's sessions are its own.
        assert!(t.db.session([200; 32], 0, KEEP).await.unwrap().is_some());
        assert_eq!(count(&t.path, "sessions"), 4);
    }
}

#[tokio::test]
async fn pruning_at_a_given_time_deletes_expired_sessions_and_unreachable_old_guests() {
    let t = open_db();
    let now = 1_000 * DAY;
    let old = now - 8 * DAY;
    let grace = SESSION_GRACE.as_millis() as u64;
    let guest = || async { t.db.create_guest().await.unwrap() };
    // A registered account is never pruned; its expired session is.
    let ann = register(&t.db, "ann").await;
    created_at(&t, ann.id, old).await;
    t.db.insert_session([1; 32], ann.id, now - grace - 1, 10)
        .await
        .unwrap();
    t.db.insert_session([2; 32], ann.id, now + DAY, 10)
        .await
        .unwrap();
    // Old guests: no session; a session expired long ago; one alive; one expired within
    // the grace; one with a game on record; one online (kept by the registry).
    let bare = guest().await;
    let expired = guest().await;
    t.db.insert_session([3; 32], expired.id, now - 2 * grace, 10)
        .await
        .unwrap();
    let alive = guest().await;
    t.db.insert_session([4; 32], alive.id, now + DAY, 10)
        .await
        .unwrap();
    let lately = guest().await;
    t.db.insert_session([5; 32], lately.id, now - grace / 2, 10)
        .await
        .unwrap();
    let played = guest().await;
    let other = guest().await;
    t.db.record_game(game(&played, &other, false, None, EndReason::Aborted))
        .await
        .unwrap();
    let online = guest().await;
    for g in [&bare, &expired, &alive, &lately, &played, &other, &online] {
        created_at(&t, g.id, old).await;
    }
    // A guest younger than the retention, with no session: it may be signing in.
    let young = guest().await;
    created_at(&t, young.id, now - 6 * DAY).await;

    let keep = HashSet::from([online.id]);
    let pruned =
        t.db.prune(PruneBatch {
            sessions_before: now - grace,
            guests_created_before: now - RETENTION.as_millis() as u64,
            sessions_after: now - grace,
            keep,
            after: (i64::MIN, i64::MIN),
            limit: 100,
        })
        .await
        .unwrap();
    assert_eq!((pruned.sessions, pruned.guests, pruned.next), (2, 2, None));
    for (account, kept) in [
        (&ann, true),
        (&bare, false),
        (&expired, false),
        (&alive, true),
        (&lately, true),
        (&played, true),
        (&other, true),
        (&online, true),
        (&young, true),
    ] {
        assert_eq!(exists(&t, account.id).await, kept, "{}", account.name);
    }
    assert!(t.db.session([2; 32], now, KEEP).await.unwrap().is_some());
    assert_eq!(count(&t.path, "sessions"), 3);
    assert_eq!(count(&t.path, "games"), 1);
    // The same time again finds nothing; a pass without the registry's protection takes
    // the online guest too.
    let registry = Registry::new();
    let again = pass(&t.db, &registry, RETENTION, now).await.unwrap();
    assert_eq!((again.sessions, again.guests), (0, 1));
    assert!(!exists(&t, online.id).await);
}

#[tokio::test]
async fn a_pass_goes_through_every_batch() {
    let t = open_db();
    let now = 1_000 * DAY;
    let n = 2 * PRUNE_BATCH + 7;
    t.db.flush().await.unwrap();
    side_connection(&t.path)
        .execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
             INSERT INTO accounts (name, guest, created_at)
             SELECT printf('guest-old%05d', i), 1, ?2 FROM n",
            rusqlite::params![n, (now - 30 * DAY) as i64],
        )
        .unwrap();
    let ann = register(&t.db, "ann").await;
    t.db.flush().await.unwrap();
    side_connection(&t.path)
        .execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
             INSERT INTO sessions (token_hash, account_id, created_at, expires_at)
             SELECT randomblob(32), ?2, 0, ?3 FROM n",
            rusqlite::params![n, ann.id, (now - 2 * DAY) as i64],
        )
        .unwrap();
    let done = pass(&t.db, &Registry::new(), RETENTION, now).await.unwrap();
    assert_eq!((done.sessions, done.guests), (n as usize, n as usize));
    assert_eq!(count(&t.path, "accounts"), 1);
    assert_eq!(count(&t.path, "sessions"), 0);
}

#[tokio::test]
async fn pages_are_read_while_the_writer_is_held() {
    let t = open_db();
    let ann = register(&t.db, "ann").await;
    let bob = register(&t.db, "bob").await;
    let record = game(&ann, &bob, true, None, EndReason::Aborted);
    let id = record.game_id.to_string();
    t.db.record_game(record).await.unwrap();
    let release = t.db.hold_writer().await;
    let page = Page {
        limit: 10,
        offset: 0,
    };
    let reads = async {
        let board = t.db.leaderboard(page).await.unwrap();
        let player = t.db.player_page("ann".into(), page).await.unwrap();
        let record = t.db.game_record(id).await.unwrap();
        (board.len(), player.is_some(), record.is_some())
    };
    let answered = tokio::time::timeout(Duration::from_secs(10), reads)
        .await
        .expect("reads do not wait for the writer");
    assert_eq!(answered, (2, true, true));
    // The writer was held all along.
    let held = tokio::time::timeout(Duration::from_millis(50), t.db.flush()).await;
    assert!(held.is_err());
    drop(release);
    t.db.flush().await.unwrap();
}

#[test]
fn a_readers_connection_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("elementals.db");
    drop(schema::open(&path).unwrap());
    let _writer = schema::open(&path).unwrap();
    let reader = schema::open_reader(&path).unwrap();
    let write = reader.execute("DELETE FROM accounts", []);
    assert!(write.is_err(), "{write:?}");
    let n: i64 = reader
        .query_row("SELECT count(*) FROM accounts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0);
}

#[test]
fn pruning_finds_its_rows_by_index() {
    let dir = tempfile::tempdir().unwrap();
    let conn = schema::open(&dir.path().join("elementals.db")).unwrap();
    let plan = |sql: &str| -> String {
        conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap()
            .query_map([], |row| row.get::<_, String>(3))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
            .join("; ")
    };
    let guests = plan(&accounts::GUEST_CANDIDATES.replace('?', "1"));
    assert!(guests.contains("INDEX accounts_idle_guests"), "{guests}");
    assert!(!guests.contains("TEMP B-TREE"), "{guests}");
    let sessions = plan(&accounts::EXPIRED_SESSIONS.replace('?', "1"));
    assert!(sessions.contains("sessions_by_expiry"), "{sessions}");
}
