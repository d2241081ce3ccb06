//! What is read back: after a restart, the leaderboard, a player's page, a game's record.

use super::*;

#[tokio::test]
async fn data_survives_shutdown_and_reopening() {
    let t = open_db();
    let ann = register(&t.db, "Ann").await;
    let bob = register(&t.db, "Bob").await;
    let record = won(&ann, &bob, Seat::One);
    let id = record.game_id.to_string();
    let changes = t.db.record_game(record.clone()).await.unwrap();
    t.db.shutdown().await.unwrap();

    let closed = t.db.account_by_id(ann.id).await;
    assert!(matches!(closed, Err(DbError::Closed)), "{closed:?}");
    assert!(matches!(t.db.shutdown().await, Err(DbError::Closed)));

    for _ in 0..2 {
        let db = Db::open(&t.path).unwrap();
        assert_eq!(fetch(&db, &ann).await.rating, 1.5);
        assert!(db.game_record(id.clone()).await.unwrap().is_some());
        // Already recorded before the restart: still exactly once.
        assert_eq!(db.record_game(record.clone()).await.unwrap(), changes);
        db.shutdown().await.unwrap();
    }
    let version: i64 = side_connection(&t.path)
        .query_row(
            "SELECT MAX(version) FROM refinery_schema_history",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(version, schema::current_version());
}

#[tokio::test]
async fn the_leaderboard_ranks_registered_players_by_rating_then_name() {
    for t in open_both() {
        register(&t.db, "ann").await;
        let bob = register(&t.db, "Bob").await;
        register(&t.db, "cat").await;
        let guest = t.db.create_guest().await.unwrap();
        set_rating(&t, bob.id, 2.0).await;
        set_rating(&t, guest.id, 9.0).await;

        let board =
            t.db.leaderboard(Page {
                limit: 10,
                offset: 0,
            })
            .await
            .unwrap();
        let names: Vec<&str> = board.iter().map(|row| row.name.as_str()).collect();
        assert_eq!(names, ["Bob", "ann", "cat"]);
        assert_eq!(board[0].rating, 2.0);
        let page = |limit, offset| Page { limit, offset };
        let names = |rows: Vec<LeaderRow>| rows.into_iter().map(|r| r.name).collect::<Vec<_>>();
        assert_eq!(
            names(t.db.leaderboard(page(2, 0)).await.unwrap()),
            ["Bob", "ann"]
        );
        assert_eq!(names(t.db.leaderboard(page(2, 2)).await.unwrap()), ["cat"]);
        assert!(t.db.leaderboard(page(2, 3)).await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn each_leaderboard_row_names_the_players_latest_rated_game() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let bob = register(&t.db, "Bob").await;
        register(&t.db, "cat").await;
        let mut first = won(&ann, &bob, Seat::One);
        first.ended_at = 10_000;
        let mut second = won(&ann, &bob, Seat::Two);
        second.ended_at = 20_000;
        let second_id = second.game_id.to_string();
        t.db.record_game(first).await.unwrap();
        t.db.record_game(second).await.unwrap();
        let board =
            t.db.leaderboard(Page {
                limit: 10,
                offset: 0,
            })
            .await
            .unwrap();
        let mut last: Vec<(&str, Option<&str>)> = board
            .iter()
            .map(|r| (r.name.as_str(), r.last_game.as_deref()))
            .collect();
        last.sort();
        let latest = Some(second_id.as_str());
        assert_eq!(last, [("Ann", latest), ("Bob", latest), ("cat", None)]);
    }
}

#[tokio::test]
async fn a_player_page_lists_rating_history_newest_first() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let bob = register(&t.db, "Bob").await;
        let mut first = won(&ann, &bob, Seat::One);
        first.ended_at = 10_000;
        let mut second = won(&ann, &bob, Seat::Two);
        second.ended_at = 20_000;
        let first_id = first.game_id.to_string();
        let second_id = second.game_id.to_string();
        t.db.record_game(first).await.unwrap();
        t.db.record_game(second).await.unwrap();

        let page =
            t.db.player_page("ANN".into(), FULL_HISTORY)
                .await
                .unwrap()
                .unwrap();
        assert_eq!(page.name, "Ann");
        assert_eq!((page.wins, page.losses, page.draws), (1, 1, 0));
        let games: Vec<&str> = page.history.iter().map(|h| h.game_id.as_str()).collect();
        assert_eq!(games, [second_id.as_str(), first_id.as_str()]);
        assert_eq!(page.history[0].at, 20_000);
        assert_eq!(page.history[0].before, page.history[1].after);
        assert_eq!(page.rating, page.history[0].after);
        assert_eq!(
            t.db.player_page("nobody".into(), FULL_HISTORY)
                .await
                .unwrap(),
            None
        );
    }
}

#[tokio::test]
async fn a_game_record_reads_back_as_the_json_it_was() {
    for t in open_both() {
        let ann = register(&t.db, "Ann").await;
        let bob = register(&t.db, "Bob").await;
        let record = won(&ann, &bob, Seat::Two);
        let id = record.game_id.to_string();
        t.db.record_game(record.clone()).await.unwrap();

        let expected = serde_json::to_value(&record).unwrap();
        assert_eq!(
            t.db.game_record(id.clone()).await.unwrap(),
            Some(expected.clone())
        );
        assert_eq!(
            t.db.game_record(id.to_uppercase()).await.unwrap(),
            Some(expected)
        );
        let unknown = GameId(uuid::Uuid::new_v4()).to_string();
        assert_eq!(t.db.game_record(unknown).await.unwrap(), None);
        assert_eq!(t.db.game_record("not-a-game".into()).await.unwrap(), None);
    }
}
