//! Finished games recorded through `Db`: the rating rules, a game counted once, the
//! indexes a record writes and reads by, the games that change no rating.

use super::*;

#[tokio::test]
async fn new_players_winner_gains_a_half_and_loser_stays_on_the_floor() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let bob = register(&t.db, "Bob").await;
        // The record's ratings are what was shown at the start; the writer rates from storage.
        let mut record = won(&ann, &bob, Seat::One);
        record.players.one.rating = 9.0;

        let changes = t.db.record_game(record).await.unwrap().unwrap();
        let half = RatingChange {
            before: 1.0,
            after: 1.5,
        };
        let floor = RatingChange {
            before: 1.0,
            after: 1.0,
        };
        assert_eq!(changes, SeatPair::new(half, floor));

        let ann = fetch(&t.db, &ann).await;
        let bob = fetch(&t.db, &bob).await;
        assert_eq!((ann.rating, ann.wins, ann.losses), (1.5, 1, 0));
        assert_eq!((bob.rating, bob.wins, bob.losses), (1.0, 0, 1));
    }
}

#[tokio::test]
async fn equal_players_at_1_3_go_to_1_8_and_the_floor() {
    let t = open_db();
    let ann = register(&t.db, "Ann").await;
    let bob = register(&t.db, "Bob").await;
    set_rating(&t, ann.id, 1.3).await;
    set_rating(&t, bob.id, 1.3).await;

    let changes =
        t.db.record_game(won(&ann, &bob, Seat::Two))
            .await
            .unwrap()
            .unwrap();
    let (winner, loser) = rate_win(1.3, 1.3);
    assert_eq!(changes, SeatPair::new(loser, winner));
    assert!((changes.two.after - 1.8).abs() < 1e-12, "{changes:?}");
    assert_eq!(changes.one.after, 1.0);
    assert_eq!(fetch(&t.db, &bob).await.rating, changes.two.after);
    assert_eq!(fetch(&t.db, &ann).await.rating, 1.0);
}

#[tokio::test]
async fn a_game_of_an_account_against_itself_is_stored_once_unrated() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let record = won(&ann, &ann, Seat::One);
        let id = record.game_id.to_string();
        // Stored, not refused: a refusal left its log to be retried at every start.
        assert_eq!(t.db.record_game(record.clone()).await.unwrap(), None);
        assert_eq!(t.db.record_game(record).await.unwrap(), None);
        let stored = t.db.game_record(id).await.unwrap().unwrap();
        assert_eq!(stored["rated"], false, "{stored}");
        let ann = fetch(&t.db, &ann).await;
        assert_eq!(
            (ann.rating, ann.wins, ann.losses, ann.draws),
            (1.0, 0, 0, 0)
        );
        assert_eq!(count(&t.path, "games"), 1);
        assert_eq!(count(&t.path, "rating_history"), 0);
        assert_eq!(count(&t.path, "games WHERE NOT rated"), 1);
    }
}

#[tokio::test]
async fn a_game_recorded_twice_counts_once() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let bob = register(&t.db, "Bob").await;
        let record = won(&ann, &bob, Seat::One);

        let first = t.db.record_game(record.clone()).await.unwrap();
        let second = t.db.record_game(record).await.unwrap();
        assert!(first.is_some());
        assert_eq!(first, second);
        let ann = fetch(&t.db, &ann).await;
        assert_eq!((ann.rating, ann.wins), (1.5, 1));
        assert_eq!(count(&t.path, "games"), 1);
        assert_eq!(count(&t.path, "rating_history"), 2);
    }
}

#[test]
fn recording_a_game_writes_no_index_that_nothing_reads() {
    let dir = tempfile::tempdir().unwrap();
    let conn = schema::open(&dir.path().join("elementals.db")).unwrap();
    let indexes = |table: &str| -> Vec<String> {
        conn.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?1 ORDER BY name",
        )
        .unwrap()
        .query_map([table], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    };
    // The games' primary key's own index, and one per seat that a player's list of games
    // reads (`history.rs`). The rating history is a WITHOUT ROWID table kept in its key's
    // order, (account, time, game): no index beside it.
    assert_eq!(
        indexes("games"),
        ["games_by_one", "games_by_two", "sqlite_autoindex_games_1"]
    );
    assert_eq!(indexes("rating_history"), Vec::<String>::new());
    assert!(conn
        .prepare("SELECT rowid FROM rating_history")
        .is_err_and(|e| e.to_string().contains("no such column")));
}

#[test]
fn a_recorded_games_changes_and_a_players_history_are_read_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let conn = schema::open(&dir.path().join("elementals.db")).unwrap();
    let plan = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {}", games::RECORDED_CHANGES))
        .unwrap()
        .query_map(["id"], |row| row.get::<_, String>(3))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    // Three look-ups by key, no scan: the lookup needs no index by game alone (dropped
    // by migration 3).
    assert_eq!(plan.len(), 3, "{plan:?}");
    for (step, key) in plan.iter().zip([
        "(id=?)",
        "(account_id=? AND at=? AND game_id=?)",
        "(account_id=? AND at=? AND game_id=?)",
    ]) {
        assert!(
            step.starts_with("SEARCH") && step.ends_with(key),
            "{plan:?}"
        );
    }
    // A player's page reads their part of the history's key backwards: no sort.
    let plan = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {}", accounts::PLAYER_HISTORY))
        .unwrap()
        .query_map(rusqlite::params![1, 200, 0], |row| row.get::<_, String>(3))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    assert_eq!(
        plan,
        ["SEARCH rating_history USING PRIMARY KEY (account_id=?)"]
    );
}

#[tokio::test]
async fn unrated_guest_drawn_and_aborted_games_change_no_rating() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let bob = register(&t.db, "Bob").await;
        let guest = t.db.create_guest().await.unwrap();
        let games = [
            game(&ann, &bob, false, Some(Seat::One), EndReason::Edge),
            game(&ann, &guest, true, Some(Seat::One), EndReason::Resignation),
            game(&ann, &bob, true, None, EndReason::DrawAgreed),
            game(&ann, &bob, true, None, EndReason::Aborted),
            game(&ann, &bob, true, None, EndReason::ServerAborted),
            game(&ann, &bob, true, None, EndReason::MaxRounds),
        ];
        for record in games {
            let id = record.game_id.to_string();
            assert_eq!(t.db.record_game(record).await.unwrap(), None);
            assert!(t.db.game_record(id).await.unwrap().is_some());
        }
        for account in [&ann, &bob] {
            let stored = fetch(&t.db, account).await;
            // Only the agreed draw is counted, as a draw.
            assert_eq!(
                (stored.rating, stored.wins, stored.losses, stored.draws),
                (1.0, 0, 0, 1)
            );
        }
        let guest = fetch(&t.db, &guest).await;
        assert_eq!((guest.rating, guest.losses, guest.draws), (1.0, 0, 0));
        assert_eq!(count(&t.path, "rating_history"), 0);
    }
}
