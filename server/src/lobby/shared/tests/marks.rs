//! The seating marks against Redis: a pairing passes over a marked neighbour for the
//! nearest unmarked one; a member's own mark is lifted for the game its node heard end; a
//! rematch, or a seek taken, takes both players out of every pool unless another game
//! marks one; a game against the computer takes its one player so.

use elementals_protocol::messages::GameId;

use super::*;

impl Pools {
    /// Marks `account` seating in game `value`, as a pairing elsewhere would have
    /// (`None`: unmarks them).
    async fn mark(&self, account: AccountId, value: Option<&str>) {
        let mut con = self.pools.con();
        let key = format!("{}{account}", self.pools.seating_prefix());
        let cmd = match value {
            Some(value) => {
                let mut cmd = ::redis::cmd("SET");
                cmd.arg(key).arg(value).arg("PX").arg(60_000);
                cmd
            }
            None => {
                let mut cmd = ::redis::cmd("DEL");
                cmd.arg(key);
                cmd
            }
        };
        cmd.query_async::<()>(&mut con).await.unwrap();
    }

    /// What `account`'s seating mark holds, if they are marked.
    async fn mark_of(&self, account: AccountId) -> Option<String> {
        let mut con = self.pools.con();
        ::redis::cmd("GET")
            .arg(format!("{}{account}", self.pools.seating_prefix()))
            .query_async(&mut con)
            .await
            .unwrap()
    }
}

fn game() -> GameId {
    GameId::new_random_from(rand::random())
}

#[tokio::test]
async fn a_marked_nearest_neighbour_is_passed_over_for_the_nearest_unmarked_one() {
    let p = pools().await;
    let k = key();
    // Below 1.0: 0.95 and 0.9 marked, then 0.85; above: 1.2 (in the window, but farther).
    // Marked as they join, they pair with nobody.
    p.mark(1, Some("1")).await;
    p.mark(2, Some("1")).await;
    for (account, rating) in [(1, 0.95), (2, 0.9), (3, 0.85), (4, 1.2)] {
        let joined = p.pools.join(&k, &member(account, rating)).await.unwrap();
        assert!(matches!(joined, Paired::Waiting { .. }), "{joined:?}");
    }
    let other = paired_with(p.pools.join(&k, &member(5, 1.0)).await.unwrap());
    assert_eq!(other.map(|m| m.account), Some(3), "0.15 away, unmarked");
    // The marked members wait on, unpaired.
    assert_eq!(p.pools.counts().await.unwrap(), vec![(k.clone(), 3)]);
    // Above 0.8, past the two marked ones, the nearest unmarked is 1.2: out of the window.
    assert!(matches!(
        p.pools.join(&k, &member(6, 0.8)).await.unwrap(),
        Paired::Waiting { waiting: 4, .. }
    ));
}

#[tokio::test]
async fn a_members_own_mark_is_lifted_only_for_the_game_its_node_heard_end() {
    let p = pools().await;
    let k = key();
    let (over, live) = (game(), game());
    p.pools.join(&k, &member(1, 1.0)).await.unwrap();
    p.mark(1, Some(&over.to_string())).await;
    assert!(matches!(
        p.pools.join(&k, &member(2, 1.0)).await.unwrap(),
        Paired::Waiting {
            waiting: 2,
            held: None,
            ..
        }
    ));
    // Held, and by which game; another game's end lifts nothing.
    for ended in [None, Some(live)] {
        match p.pools.pair(&k, 1, ended).await.unwrap() {
            Paired::Waiting { held, .. } => assert_eq!(held, Some(over)),
            other => panic!("{other:?}"),
        }
    }
    // Its own game's end does: paired, both marked for the new game.
    let Paired::With(other, new) = p.pools.pair(&k, 1, Some(over)).await.unwrap() else {
        panic!("not paired");
    };
    assert_eq!(other.account, 2);
    for account in [1, 2] {
        assert_eq!(p.mark_of(account).await, Some(new.to_string()));
    }
    // A mark that names no game holds a member all the same.
    p.pools.join(&k, &member(3, 1.0)).await.unwrap();
    p.mark(3, Some("1")).await;
    assert!(matches!(
        p.pools.pair(&k, 3, Some(over)).await.unwrap(),
        Paired::Waiting { held: None, .. }
    ));
    assert_eq!(p.mark_of(3).await.as_deref(), Some("1"));
}

#[tokio::test]
async fn a_rematch_takes_both_players_out_of_every_pool_unless_another_game_marks_one() {
    let p = pools().await;
    let rated = key();
    let unrated = SharedKey {
        rated: false,
        ..key()
    };
    // 1 and 2 (the rematch's players) wait in two pools, 3 (far off) in one of them.
    p.pools.join(&rated, &member(1, 1.0)).await.unwrap();
    p.pools.join(&unrated, &member(2, 1.0)).await.unwrap();
    p.pools.join(&rated, &member(3, 30.0)).await.unwrap();
    let (finished, other_game) = (game(), game());
    // The finished game's own mark holds nobody; another game's does.
    p.mark(2, Some(&finished.to_string())).await;
    p.mark(1, Some(&other_game.to_string())).await;
    assert_eq!(
        p.pools.seat_rematch(1, 2, finished).await.unwrap(),
        Taken::AcceptorSeating(Some(other_game))
    );
    assert_eq!(
        p.pools.seat_rematch(2, 1, finished).await.unwrap(),
        Taken::MakerSeating
    );
    assert_eq!(p.pools.counts().await.unwrap().len(), 2, "nobody taken");
    p.mark(1, None).await;
    let Taken::Taken(rematch) = p.pools.seat_rematch(2, 1, finished).await.unwrap() else {
        panic!("not seated");
    };
    for account in [1, 2] {
        assert_eq!(p.mark_of(account).await, Some(rematch.to_string()));
    }
    assert!(matches!(
        p.pools.pair(&rated, 1, None).await.unwrap(),
        Paired::NotWaiting
    ));
    assert!(matches!(
        p.pools.pair(&unrated, 2, None).await.unwrap(),
        Paired::NotWaiting
    ));
    assert_eq!(p.pools.counts().await.unwrap(), vec![(rated, 1)]);
}

#[tokio::test]
async fn a_seek_taken_takes_both_players_out_of_every_pool_past_a_mark_of_a_game_over() {
    let p = pools().await;
    let k = key();
    // 1 (about to accept) and 2 (the maker) wait in the pool.
    for account in [1, 2] {
        p.pools
            .join(&k, &member(account, 10.0 * account as f64))
            .await
            .unwrap();
    }
    let seek = Seek {
        seek_id: p.pools.first_id() + 1,
        by: member(2, 20.0).info,
        variant: Variant::CLASSIC,
        time_control: TimeControl::preset("blitz").unwrap(),
        rated: true,
    };
    p.pools.put_seek(&seek, &member(2, 20.0)).await.unwrap();
    // 1 is held by its last game's mark, but for the acceptor's node saying it is over.
    let over = game();
    p.mark(1, Some(&over.to_string())).await;
    assert_eq!(
        p.pools.accept_seek(seek.seek_id, 1, 2, None).await.unwrap(),
        Taken::AcceptorSeating(Some(over))
    );
    let taken = p.pools.accept_seek(seek.seek_id, 1, 2, Some(over)).await;
    let Taken::Taken(game) = taken.unwrap() else {
        panic!("not taken");
    };
    for account in [1, 2] {
        assert!(matches!(
            p.pools.pair(&k, account, None).await.unwrap(),
            Paired::NotWaiting
        ));
        assert_eq!(p.mark_of(account).await, Some(game.to_string()));
    }
    assert!(p.pools.counts().await.unwrap().is_empty());
    assert_eq!(
        p.pools.accept_seek(seek.seek_id, 1, 2, None).await.unwrap(),
        Taken::NotOpen
    );
}

#[tokio::test]
async fn a_player_taken_alone_leaves_every_pool_unless_another_game_marks_them() {
    let p = pools().await;
    let k = key();
    // 1 (about to play the computer) and 2, its nearest neighbour, wait in the pool.
    p.pools.join(&k, &member(1, 1.0)).await.unwrap();
    p.pools.join(&k, &member(2, 40.0)).await.unwrap();
    let (over, live) = (game(), game());
    p.mark(1, Some(&live.to_string())).await;
    assert_eq!(
        p.pools.take_alone(1, Some(over)).await.unwrap(),
        Taken::AcceptorSeating(Some(live)),
        "another game's mark holds them"
    );
    assert_eq!(p.pools.counts().await.unwrap(), vec![(k.clone(), 2)]);
    // Their last game's mark, that game over, holds nobody.
    p.mark(1, Some(&over.to_string())).await;
    let Taken::Taken(alone) = p.pools.take_alone(1, Some(over)).await.unwrap() else {
        panic!("not taken");
    };
    assert_eq!(p.mark_of(1).await, Some(alone.to_string()));
    assert!(matches!(
        p.pools.pair(&k, 1, None).await.unwrap(),
        Paired::NotWaiting
    ));
    // 2 waits on, alone, and unmarked.
    assert_eq!(p.pools.counts().await.unwrap(), vec![(k, 1)]);
    assert_eq!(p.mark_of(2).await, None);
}
