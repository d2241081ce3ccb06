//! Cluster mode, the lobby's races across nodes, with real server processes (the one
//! lobby, on A, takes requests from every node in turn):
//! a pooled player who accepts a seek, starts a game against the computer, or whose
//! rematch is accepted, while another node pairs them ends up in one game; a player
//! paired by another node may queue again as soon as that game is over, and is paired
//! again at once; a player accepting two seeks back to back is seated once, while the
//! first game starts on another node. (Challenges' races: `cluster_lobby_challenges.rs`.)

use crate::cluster_support::*;
use crate::common::*;
use elementals_protocol::messages::{ClientMsg, GameId, ServerMsg};
use elementals_protocol::rules::Variant;
use elementals_protocol::ErrorCode;

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

/// Whether a request that races a pairing won it: `ok`, or `already_in_game` if the pool
/// took the player first.
fn won_the_race(answer: &ServerMsg) -> bool {
    match answer {
        ServerMsg::Ok { .. } => true,
        ServerMsg::Error {
            code: ErrorCode::AlreadyInGame,
            ..
        } => false,
        other => panic!("{other:?}"),
    }
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
        let against_bot = won_the_race(&played);
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
    // Paired on Quin's arrival, from B.
    pat.join_pool(Variant::CLASSIC, "blitz").await;
    quin.join_pool(Variant::CLASSIC, "blitz").await;
    let game = started(&mut pat).await;
    assert_eq!(started(&mut quin).await, game);
    pat.resign(game).await;
    pat.expect("game_over", |m| matches!(m, ServerMsg::GameOver { .. }))
        .await;
    // At once, well within the lobby's next tick.
    pat.join_pool(Variant::CLASSIC, "blitz").await;
    let id = pat.id();
    assert_ok(&pat.request(ClientMsg::LeavePool { id }).await);
}

/// Pat (on A) and Quin (on B), paired in the unrated pool on Pat's arrival (the game runs
/// on the node of one of them), and the game over at once: Pat resigned before round 1 was
/// played.
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
    // Both queue again at once: Pat waits, and Quin's join pairs them, its `queued` followed by the game's start with
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
        let by_accept = won_the_race(&accepted);
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

/// What `client` hears up to the answers to requests `ids` and a `game_start`: the
/// answers, in `ids`' order, and the game started.
async fn answers_and_start(client: &mut TestClient, ids: [u32; 2]) -> ([ServerMsg; 2], GameId) {
    let (mut answers, mut game) = ([None, None], None);
    while answers.iter().any(Option::is_none) || game.is_none() {
        let msg = client.recv().await;
        if let ServerMsg::GameStart { game: info, .. } = &msg {
            game = Some(info.game_id);
        } else if let Some(i) = ids.iter().position(|id| msg.reply_id() == Some(*id)) {
            answers[i] = Some(msg);
        }
    }
    (answers.map(Option::unwrap), game.unwrap())
}

/// Pat, on C, sends two acceptances of live seeks made on B at once (her node forwards
/// the second as soon as the lobby, on A, has answered the first). The first game starts
/// on a node of its players, B when the seek's maker sits first, and B's word of it may
/// reach A after Pat's second request: the lobby counts the seat it has just given all
/// the same, and refuses the second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_accepting_two_seeks_at_once_is_seated_once_wherever_the_first_game_starts() {
    let cluster = Cluster::new();
    let _a = cluster.node("a").await;
    let b = cluster.node("b").await;
    let c = cluster.node("c").await;
    for attempt in 0..ATTEMPTS {
        let mut mo = signed_in(&b, &format!("mo{attempt}")).await;
        let mut nia = signed_in(&b, &format!("nia{attempt}")).await;
        let seeks = [seek_id_at(&mut mo).await, seek_id_at(&mut nia).await];
        let mut pat = signed_in(&c, &format!("pat{attempt}")).await;
        let ids = [pat.id(), pat.id()];
        for (id, seek_id) in ids.into_iter().zip(seeks) {
            pat.send(&ClientMsg::AcceptSeek { id, seek_id }).await;
        }
        let ([first, second], game) = answers_and_start(&mut pat, ids).await;
        assert_ok(&first);
        assert_error(&second, ErrorCode::AlreadyInGame);
        assert_eq!(started(&mut mo).await, game, "attempt {attempt}");
        // Nia's seek is still open: Pat took one seat only.
        let id = nia.id();
        let listed = nia.request(ClientMsg::ListSeeks { id }).await;
        let ServerMsg::Seeks { seeks: open, .. } = listed else {
            panic!("{listed:?}");
        };
        assert_eq!(
            open.iter().map(|s| s.seek_id).collect::<Vec<_>>(),
            [seeks[1]]
        );
    }
}
