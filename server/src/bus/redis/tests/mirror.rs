//! The directory's mirror on its own, with no Redis behind it: a sign-in elsewhere, the
//! mirror read again after a cut, the time cut off not held against the other nodes, and
//! sleeping games mirrored, woken elsewhere and mended from storage.

use super::*;

#[test]
fn a_sign_in_elsewhere_supersedes_an_earlier_one_here_not_a_later_one() {
    let dir = mirror();
    let conn = (1 << NODE_SHIFT) | 5;
    dir.user_online(7, "ann", conn);
    let now = crate::clock::unix_ms();
    let elsewhere = |at_ms| ClusterMsg::SignedIn {
        account: 7,
        node: 2,
        at_ms,
    };
    // A message slow to come, of a sign-in before this one: this one stands.
    assert_eq!(dir.heard(elsewhere(now - 1_000)), None);
    // Another account's sign-in changes nothing here.
    let other = ClusterMsg::SignedIn {
        account: 8,
        node: 2,
        at_ms: now + 1_000,
    };
    assert_eq!(dir.heard(other), None);
    // A later one supersedes it, once.
    assert_eq!(dir.heard(elsewhere(now + 1_000)), Some(conn));
    assert_eq!(dir.heard(elsewhere(now + 2_000)), None);
}

#[tokio::test(start_paused = true)]
async fn the_mirror_read_again_takes_what_was_missed_and_drops_only_games_nobody_announces() {
    use super::directory::NODE_TIMEOUT;
    let dir = mirror();
    let game = || GameId(uuid::Uuid::new_v4());
    let (moved, ended, announced, opened) = (game(), game(), game(), game());
    dir.load(vec![
        (moved, dir_entry(moved, 2)),
        (ended, dir_entry(ended, 2)),
        (announced, dir_entry(announced, 2)),
    ]);
    // While this node was away: `moved` was taken over by node 3, `opened` opened on
    // node 2, `ended` ended; `announced` is missing from a Redis restarted empty.
    dir.reload(vec![
        (moved, dir_entry(moved, 3)),
        (opened, dir_entry(opened, 2)),
    ]);
    assert_eq!(dir.node_of(moved), Some(3));
    assert_eq!(dir.node_of(opened), Some(2));
    // The missing ones stay for now: their node may have yet to write them again.
    dir.flush();
    assert_eq!(dir.node_of(ended), Some(2));
    // Node 2 rejoins and announces its games: `announced` is confirmed.
    let entry = dir_entry(announced, 2);
    assert_eq!(
        dir.heard(ClusterMsg::Opened {
            game: announced,
            entry
        }),
        None
    );
    tokio::time::advance(NODE_TIMEOUT).await;
    dir.flush();
    assert_eq!(dir.node_of(ended), None, "ended while this node was away");
    assert_eq!(dir.node_of(announced), Some(2));
    assert_eq!(dir.node_of(moved), Some(3));
}

#[tokio::test(start_paused = true)]
async fn the_time_cut_off_from_redis_does_not_count_against_the_other_nodes() {
    let dir = mirror();
    let alive = |node| ClusterMsg::Alive {
        node,
        online: 0,
        sent_ms: 0,
        lobby: None,
    };
    dir.heard(alive(2));
    dir.heard(alive(3));
    dir.heard(ClusterMsg::Gone { node: 3 });
    dir.set_reaches_redis(false);
    tokio::time::advance(directory::NODE_TIMEOUT * 3).await;
    assert!(
        !dir.is_alive(2),
        "not heard for long, as seen while cut off"
    );
    dir.set_reaches_redis(true);
    assert!(
        dir.is_alive(2),
        "its silence while this node could not hear it says nothing"
    );
    assert!(!dir.is_alive(3), "a node gone before the cut stays gone");
    tokio::time::advance(directory::NODE_TIMEOUT).await;
    assert!(
        !dir.is_alive(2),
        "silent a whole NODE_TIMEOUT since the rejoin: dead"
    );
}

#[tokio::test(start_paused = true)]
async fn a_node_taken_for_dead_is_alive_again_once_heard_from_by_any_word() {
    let dir = mirror();
    dir.heard(ClusterMsg::Alive {
        node: 2,
        online: 4,
        sent_ms: 0,
        lobby: None,
    });
    tokio::time::advance(directory::NODE_TIMEOUT).await;
    assert!(!dir.is_alive(2), "silent a whole NODE_TIMEOUT: dead");
    // Its `Restore` to the lobby here, say, before its next `Alive`.
    dir.heard_from(2);
    assert!(dir.is_alive(2));
    dir.heard_from(1);
    assert!(dir.is_alive(1), "this node itself is always alive");
    tokio::time::advance(directory::NODE_TIMEOUT).await;
    assert!(!dir.is_alive(2), "silent again a whole NODE_TIMEOUT: dead");
}

#[tokio::test(start_paused = true)]
async fn a_long_silent_nodes_games_and_seats_are_forgotten_unless_claimed_elsewhere() {
    let dir = mirror();
    let alive = |node| ClusterMsg::Alive {
        node,
        online: 0,
        sent_ms: 0,
        lobby: None,
    };
    let (ended, claimed) = (GameId(uuid::Uuid::new_v4()), GameId(uuid::Uuid::new_v4()));
    for game in [ended, claimed] {
        let entry = dir_entry(game, 2);
        dir.heard(ClusterMsg::Opened { game, entry });
    }
    dir.heard(alive(2));
    dir.heard(alive(3));
    // Node 2 dies. Dead, but within the claim's time, its games and seats stay: their
    // players are told the game's node is gone, not that they sit nowhere.
    tokio::time::advance(directory::NODE_TIMEOUT + crate::db::LEASE).await;
    dir.heard(alive(3));
    dir.flush();
    assert!(!dir.is_alive(2));
    assert_eq!(dir.node_of(ended), Some(2));
    assert_eq!(dir.seats_of(1).len(), 2);
    // Node 3 claims one of them.
    let entry = dir_entry(claimed, 3);
    dir.heard(ClusterMsg::Opened {
        game: claimed,
        entry,
    });
    // Past the claim's time: the game nobody claimed (it ended with its node) goes, and
    // its seats with it; the claimed one stays.
    tokio::time::advance(crate::db::LEASE).await;
    dir.heard(alive(3));
    dir.flush();
    assert_eq!(dir.node_of(ended), None);
    assert_eq!(dir.node_of(claimed), Some(3));
    let seats = dir.seats_of(1);
    assert_eq!(seats.len(), 1, "{seats:?}");
    assert_eq!(seats[0].game_id, claimed);
}

#[tokio::test]
async fn sleeping_games_are_mirrored_seated_woken_elsewhere_and_mended_from_storage() {
    use elementals_protocol::messages::SeatPair;
    let dir = mirror();
    let (slept, woke, missed) = (
        GameId(uuid::Uuid::new_v4()),
        GameId(uuid::Uuid::new_v4()),
        GameId(uuid::Uuid::new_v4()),
    );
    for (game, seats) in [(slept, SeatPair::new(1, 2)), (woke, SeatPair::new(3, 4))] {
        dir.heard(wire::ClusterMsg::Slept {
            game,
            seats,
            node: 2,
            summary: Some(dir_entry(game, 2).summary),
        });
    }
    assert!(dir.dormant(slept).is_some());
    let listed = |dir: &Directory| {
        let mut games: Vec<GameId> = dir.dormant_games().iter().map(|g| g.game_id).collect();
        games.sort();
        games
    };
    let mut both = vec![slept, woke];
    both.sort();
    assert_eq!(listed(&dir), both);
    assert_eq!(dir.seat_of(2), Some((slept, Seat::Two)));
    assert_eq!(dir.node_of(slept), None);
    // A node wakes `woke`: it runs there, and sleeps no more.
    let entry = wire::DirEntry {
        seats: SeatPair::new(3, 4),
        ..dir_entry(woke, 3)
    };
    dir.heard(wire::ClusterMsg::Opened { game: woke, entry });
    assert_eq!((dir.node_of(woke), dir.dormant(woke)), (Some(3), None));
    assert_eq!(listed(&dir), [slept]);
    assert_eq!(dir.seat_of(3), Some((woke, Seat::One)));
    // This node's own word, heard back, changes nothing.
    dir.heard(wire::ClusterMsg::Slept {
        game: woke,
        seats: SeatPair::new(3, 4),
        node: 1,
        summary: None,
    });
    assert_eq!(dir.node_of(woke), Some(3));
    // Back from a Redis outage: storage lists `missed` asleep and `slept` no longer (it
    // woke and ended meanwhile): the mirror follows, its seats freed.
    let mark = dir.dormant_mark();
    let row = (
        missed,
        SeatPair::new(5, 6),
        Some(dir_entry(missed, 2).summary),
    );
    dir.sleepers_read(vec![row], mark);
    assert!(dir.dormant(missed).is_some());
    assert_eq!(listed(&dir), [missed]);
    assert_eq!(dir.seat_of(5), Some((missed, Seat::One)));
    assert!(dir.dormant(slept).is_none());
    assert_eq!(dir.seat_of(1), None);
}
