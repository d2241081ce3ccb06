//! Cluster mode (issue 26), the lobby's races across nodes, with real server processes:
//! a pooled player who accepts a seek, starts a game against the computer, or whose
//! rematch is accepted, while another node pairs them ends up in one game, and one whose
//! challenge is accepted waits in no pool (nor does one left there, by a join that raced
//! the acceptance); a player paired by another node may queue again as soon as that game
//! is over, and is paired again at once.

mod cluster_support;
mod common;

use cluster_support::*;
use common::*;
use elementals_protocol::messages::{ClientMsg, GameId, ServerMsg};
use elementals_protocol::rules::Variant;
use elementals_protocol::{ErrorCode, TimeControl};
use std::time::Duration;
use tokio::time::Instant;

/// Attempts at the race; each is a few Redis round trips.
const ATTEMPTS: usize = 8;
/// Attempts at the rematch's race; each plays a game first.
const REMATCH_ATTEMPTS: usize = 4;

/// Whether the pool paired `client`: it asks to leave the pool, which it is still in
/// (and now leaves) unless a pairing took it out.
async fn paired_by_pool(client: &mut TestClient) -> bool {
    let id = client.id();
    match client.request(ClientMsg::LeavePool { id }).await {
        ServerMsg::Ok { .. } => false,
        ServerMsg::Error {
            code: ErrorCode::NotQueued,
            ..
        } => true,
        other => panic!("{other:?}"),
    }
}

/// The game `client` starts.
async fn started(client: &mut TestClient) -> GameId {
    client.game_start().await.0.game_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_player_accepting_a_seek_as_another_node_pairs_them_plays_one_game() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let mut by_seek = 0;
    for attempt in 0..ATTEMPTS {
        // Pat waits in a pool on A; on B, Mo has a seek open and Quin is about to join
        // Pat's pool. Pat accepts the seek as Quin joins.
        let mut pat = signed_in(&a, &format!("pat{attempt}")).await;
        let mut mo = signed_in(&b, &format!("mo{attempt}")).await;
        let mut quin = signed_in(&b, &format!("quin{attempt}")).await;
        pat.join_pool(Variant::CLASSIC, "blitz").await;
        let seek_id = seek_id_at(&mut mo).await;
        let (accept, join) = (pat.id(), quin.id());
        let (accepted, queued) = tokio::join!(
            pat.request(ClientMsg::AcceptSeek {
                id: accept,
                seek_id
            }),
            quin.request(ClientMsg::JoinPool {
                id: join,
                variant: Variant::CLASSIC,
                time_control: "blitz".into(),
                rated: true,
            }),
        );
        assert!(matches!(queued, ServerMsg::Queued { .. }), "{queued:?}");
        let by_accept = match &accepted {
            ServerMsg::Ok { .. } => true,
            ServerMsg::Error { code, .. } => {
                assert!(
                    matches!(code, ErrorCode::AlreadyInGame | ErrorCode::UnknownSeek),
                    "{accepted:?}"
                );
                false
            }
            other => panic!("{other:?}"),
        };
        // Quin was paired (with Pat, the pool's only other member) unless it still waits.
        let by_pool = paired_by_pool(&mut quin).await;
        assert!(
            by_accept != by_pool,
            "attempt {attempt}: Pat is in exactly one game (seek: {by_accept}, pool: {by_pool})"
        );
        let game = started(&mut pat).await;
        let other = if by_accept { &mut mo } else { &mut quin };
        assert_eq!(started(other).await, game);
        if by_accept {
            by_seek += 1;
            // The seek is gone for its maker, who cannot cancel it.
        } else {
            let id = mo.id();
            assert_ok(&mo.request(ClientMsg::CancelSeek { id, seek_id }).await);
        }
        pat.resign(game).await;
        for client in [pat, mo, quin] {
            client.close().await;
        }
    }
    eprintln!("{by_seek} of {ATTEMPTS} attempts went to the seek");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_player_starting_a_computer_game_as_another_node_pairs_them_plays_one_game() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let mut by_bot = 0;
    for attempt in 0..ATTEMPTS {
        // Pat waits in a pool on A and asks for a game against the computer as Quin, on
        // B, joins Pat's pool.
        let mut pat = signed_in(&a, &format!("pat{attempt}")).await;
        let mut quin = signed_in(&b, &format!("quin{attempt}")).await;
        pat.join_pool(Variant::CLASSIC, "blitz").await;
        let (bot, join) = (pat.id(), quin.id());
        let (played, queued) = tokio::join!(
            pat.request(ClientMsg::PlayBot {
                id: bot,
                strength: "easy".into(),
                variant: Variant::CLASSIC,
                time_control: "blitz".into(),
            }),
            quin.request(ClientMsg::JoinPool {
                id: join,
                variant: Variant::CLASSIC,
                time_control: "blitz".into(),
                rated: true,
            }),
        );
        assert!(matches!(queued, ServerMsg::Queued { .. }), "{queued:?}");
        let against_bot = match &played {
            ServerMsg::Ok { .. } => true,
            ServerMsg::Error {
                code: ErrorCode::AlreadyInGame,
                ..
            } => false,
            other => panic!("{other:?}"),
        };
        // Quin was paired (with Pat, the pool's only other member) unless it still waits.
        let by_pool = paired_by_pool(&mut quin).await;
        assert!(
            against_bot != by_pool,
            "attempt {attempt}: Pat is in exactly one game (computer: {against_bot}, pool: {by_pool})"
        );
        let game = started(&mut pat).await;
        if by_pool {
            assert_eq!(started(&mut quin).await, game);
        }
        by_bot += usize::from(against_bot);
        pat.resign(game).await;
        for client in [pat, quin] {
            client.close().await;
        }
    }
    eprintln!("{by_bot} of {ATTEMPTS} attempts went to the computer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_paired_by_another_node_queues_again_as_soon_as_the_game_is_over() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let mut pat = signed_in(&a, "pat").await;
    let mut quin = signed_in(&b, "quin").await;
    // Paired by B, on Quin's arrival: A's lobby hears of it only through the cluster.
    pat.join_pool(Variant::CLASSIC, "blitz").await;
    quin.join_pool(Variant::CLASSIC, "blitz").await;
    let game = started(&mut pat).await;
    assert_eq!(started(&mut quin).await, game);
    pat.resign(game).await;
    pat.expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
        .await;
    // At once, well within A's next lobby tick.
    pat.join_pool(Variant::CLASSIC, "blitz").await;
    let id = pat.id();
    assert_ok(&pat.request(ClientMsg::LeavePool { id }).await);
}

/// `client` joins the unrated blitz pool (everyone's rating stays 1.0 there, so any two
/// waiting are paired at once); the answer, whatever it is.
async fn join_unrated(client: &mut TestClient) -> ServerMsg {
    let id = client.id();
    client
        .request(ClientMsg::JoinPool {
            id,
            variant: Variant::CLASSIC,
            time_control: "blitz".into(),
            rated: false,
        })
        .await
}

async fn queued_unrated(client: &mut TestClient) {
    let queued = join_unrated(client).await;
    assert!(matches!(queued, ServerMsg::Queued { .. }), "{queued:?}");
}

/// Pat (on A) and Quin (on B), paired in the unrated pool by A on Pat's arrival (so the
/// game runs on A), and the game over at once: Pat resigned before round 1 was played.
/// Both have heard the end, and nothing else is left to read.
async fn played_at_once(
    a: &Node,
    b: &Node,
    names: (&str, &str),
) -> (TestClient, TestClient, GameId) {
    let mut quin = signed_in(b, names.1).await;
    queued_unrated(&mut quin).await;
    let mut pat = signed_in(a, names.0).await;
    queued_unrated(&mut pat).await;
    let game = started(&mut pat).await;
    assert_eq!(started(&mut quin).await, game);
    pat.resign(game).await;
    for client in [&mut pat, &mut quin] {
        client
            .expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
            .await;
        client.received_before_pong().await;
    }
    (pat, quin, game)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_whose_game_ended_at_once_is_paired_again_or_takes_a_seek_at_once() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let (mut pat, mut quin, game) = played_at_once(&a, &b, ("pat", "quin")).await;
    // Both queue again at once (their pairing's marks, 2 s, are far from lapsing): Pat
    // waits, and Quin's join pairs them, its `queued` followed by the game's start with
    // no lobby tick between.
    queued_unrated(&mut pat).await;
    queued_unrated(&mut quin).await;
    let next = quin.recv().await;
    let ServerMsg::GameStart { game: again, .. } = next else {
        panic!("Quin's join did not pair them: {next:?}");
    };
    assert_ne!(again.game_id, game);
    assert_eq!(started(&mut pat).await, again.game_id);
    // That game over at once too, Pat accepts Moe's seek at once.
    let mut moe = signed_in(&b, "moe").await;
    let seek_id = seek_id_at(&mut moe).await;
    quin.resign(again.game_id).await;
    pat.expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
        .await;
    let id = pat.id();
    assert_ok(&pat.request(ClientMsg::AcceptSeek { id, seek_id }).await);
    let seeked = started(&mut pat).await;
    assert_eq!(started(&mut moe).await, seeked);
}

/// `client`'s rematch offer for `game_id`.
fn offer_rematch(client: &mut TestClient, game_id: GameId) -> ClientMsg {
    ClientMsg::OfferRematch {
        id: client.id(),
        game_id,
    }
}

/// Takes the seating marks of every player out of Redis, as if their last game had begun
/// longer ago than the marks last (2 s).
fn marks_lapsed(cluster: &Cluster) {
    let mut con = cluster.redis();
    let marks: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:seating:*", cluster.name))
        .query(&mut con)
        .unwrap();
    if !marks.is_empty() {
        redis::cmd("DEL").arg(marks).query::<()>(&mut con).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_player_whose_rematch_is_accepted_as_another_node_pairs_them_plays_one_game() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let mut by_rematch = 0;
    for attempt in 0..REMATCH_ATTEMPTS {
        // Pat and Quin have played on A. Quin waits in a pool again on B and offers a
        // rematch; Ray, on B, is about to join Quin's pool. Pat accepts as Ray joins.
        let names = (format!("pat{attempt}"), format!("quin{attempt}"));
        let (mut pat, mut quin, game) = played_at_once(&a, &b, (&names.0, &names.1)).await;
        marks_lapsed(&cluster);
        let mut ray = signed_in(&b, &format!("ray{attempt}")).await;
        queued_unrated(&mut quin).await;
        let offer = offer_rematch(&mut quin, game);
        assert_ok(&quin.request(offer).await);
        pat.expect(
            "rematch_offered",
            |m| matches!(m, ServerMsg::RematchOffered { game_id, .. } if *game_id == game),
        )
        .await;
        let offer = offer_rematch(&mut pat, game);
        let (accepted, queued) = tokio::join!(pat.request(offer), join_unrated(&mut ray));
        assert!(matches!(queued, ServerMsg::Queued { .. }), "{queued:?}");
        let by_accept = match &accepted {
            ServerMsg::Ok { .. } => true,
            ServerMsg::Error {
                code: ErrorCode::AlreadyInGame,
                ..
            } => false,
            other => panic!("{other:?}"),
        };
        // Ray was paired (with Quin, the pool's only other member) unless Ray still waits.
        let by_pool = paired_by_pool(&mut ray).await;
        assert!(
            by_accept != by_pool,
            "attempt {attempt}: Quin is in exactly one game (rematch: {by_accept}, pool: {by_pool})"
        );
        let next = started(&mut quin).await;
        let other = if by_accept { &mut pat } else { &mut ray };
        assert_eq!(started(other).await, next);
        by_rematch += usize::from(by_accept);
        quin.resign(next).await;
        for client in [pat, quin, ray] {
            client.close().await;
        }
    }
    eprintln!("{by_rematch} of {REMATCH_ATTEMPTS} attempts went to the rematch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_player_whose_challenge_is_accepted_on_another_node_waits_in_no_pool() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    // Pat waits in a pool on A and challenges Quin, on B, who accepts.
    let mut pat = signed_in(&a, "pat").await;
    queued_unrated(&mut pat).await;
    let mut quin = signed_in(&b, "quin").await;
    let id = pat.id();
    let sent = pat
        .request(ClientMsg::Challenge {
            id,
            opponent: "quin".into(),
            variant: Variant::CLASSIC,
            time_control: TimeControl::preset("blitz").unwrap(),
            rated: false,
        })
        .await;
    let ServerMsg::ChallengeSent { challenge, .. } = sent else {
        panic!("{sent:?}");
    };
    quin.expect("challenge_received", |m| {
        matches!(m, ServerMsg::ChallengeReceived { .. })
    })
    .await;
    let id = quin.id();
    let challenge_id = challenge.challenge_id;
    assert_ok(
        &quin
            .request(ClientMsg::AcceptChallenge { id, challenge_id })
            .await,
    );
    let game = started(&mut quin).await;
    assert_eq!(started(&mut pat).await, game);
    // Long after (its marks lapsed), Ray joins Pat's pool: nobody waits there.
    marks_lapsed(&cluster);
    let mut ray = signed_in(&b, "ray").await;
    queued_unrated(&mut ray).await;
    let id = ray.id();
    let left = ray.request(ClientMsg::LeavePool { id }).await;
    assert!(
        matches!(left, ServerMsg::Ok { .. }),
        "Ray was paired with Pat, who plays Quin: {left:?}"
    );
}

/// `from` challenges `to` (unrated blitz), who hears of it; the challenge's id.
async fn challenged(from: &mut TestClient, to: &mut TestClient, to_name: &str) -> u64 {
    let id = from.id();
    let sent = from
        .request(ClientMsg::Challenge {
            id,
            opponent: to_name.into(),
            variant: Variant::CLASSIC,
            time_control: TimeControl::preset("blitz").unwrap(),
            rated: false,
        })
        .await;
    let ServerMsg::ChallengeSent { challenge, .. } = sent else {
        panic!("{sent:?}");
    };
    to.expect("challenge_received", |m| {
        matches!(m, ServerMsg::ChallengeReceived { .. })
    })
    .await;
    challenge.challenge_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_player_seated_by_another_node_but_still_in_the_pool_is_withdrawn_there() {
    let cluster = Cluster::new();
    let a = cluster.node("a").await;
    let b = cluster.node("b").await;
    // Pat waits in a pool on A and has challenged Quin, on B, who accepts.
    let mut pat = signed_in(&a, "pat").await;
    queued_unrated(&mut pat).await;
    let mut quin = signed_in(&b, "quin").await;
    let challenge_id = challenged(&mut pat, &mut quin, "quin").await;
    // As a join of Pat's racing the acceptance would (handled on A before A heard of the
    // game, it puts Pat back in the pool), Pat's pool is left to hold them: hidden from
    // the script that takes both players out of every pool with members.
    let mut con = cluster.redis();
    let pools = format!("{}:pools", cluster.name);
    let pool: Vec<String> = redis::cmd("SMEMBERS").arg(&pools).query(&mut con).unwrap();
    redis::cmd("DEL").arg(&pools).query::<()>(&mut con).unwrap();
    let id = quin.id();
    assert_ok(
        &quin
            .request(ClientMsg::AcceptChallenge { id, challenge_id })
            .await,
    );
    let game = started(&mut quin).await;
    assert_eq!(started(&mut pat).await, game);
    redis::cmd("SADD")
        .arg(&pools)
        .arg(&pool)
        .query::<()>(&mut con)
        .unwrap();
    // Pat, seated (and marked seating by the game for 2 s), waits in no pool once A's
    // lobby has looked (its tick, each second): no pairing can take them once the mark
    // lapses.
    let members = format!("{}:pool:{}", cluster.name, pool[0]);
    let deadline = Instant::now() + WAIT;
    while redis::cmd("ZCARD")
        .arg(&members)
        .query::<u64>(&mut con)
        .unwrap()
        > 0
    {
        assert!(
            Instant::now() < deadline,
            "Pat, seated, still waits in a pool"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    marks_lapsed(&cluster);
    let mut ray = signed_in(&b, "ray").await;
    queued_unrated(&mut ray).await;
    let id = ray.id();
    let left = ray.request(ClientMsg::LeavePool { id }).await;
    assert!(
        matches!(left, ServerMsg::Ok { .. }),
        "Ray was paired with Pat, who plays Quin: {left:?}"
    );
}
