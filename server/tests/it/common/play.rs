//! What a test client does as a player: sign in, queue, commit, reveal; and the helpers
//! that pair two players and play a round.

use elementals_protocol::TimeControl;

use super::*;

impl TestClient {
    pub async fn register(&mut self, name: &str) -> String {
        let id = self.id();
        match self
            .request(ClientMsg::Register {
                id,
                name: name.into(),
                password: "password123".into(),
            })
            .await
        {
            ServerMsg::Authenticated { token, .. } => {
                self.token = Some(token.clone());
                token
            }
            other => panic!("register failed: {other:?}"),
        }
    }

    pub async fn resume(&mut self, token: &str) -> ServerMsg {
        let id = self.id();
        self.request(ClientMsg::Resume {
            id,
            token: token.into(),
        })
        .await
    }

    /// Resign `game_id`, which must be answered `ok`.
    pub async fn resign(&mut self, game_id: GameId) {
        let id = self.id();
        assert_ok(&self.request(ClientMsg::Resign { id, game_id }).await);
    }

    pub async fn join_pool(&mut self, variant: Variant, preset: &str) {
        let id = self.id();
        match self
            .request(ClientMsg::JoinPool {
                id,
                variant,
                time_control: preset.into(),
                rated: true,
            })
            .await
        {
            ServerMsg::Queued { .. } => {}
            other => panic!("join_pool failed: {other:?}"),
        }
    }

    /// Wait for the game to start; returns the game and this client's seat.
    pub async fn game_start(&mut self) -> (GameInfo, Seat) {
        match self
            .expect("game_start", |m| matches!(m, ServerMsg::GameStart { .. }))
            .await
        {
            ServerMsg::GameStart { game, seat } => (game, seat),
            _ => unreachable!(),
        }
    }

    pub async fn commit(
        &mut self,
        game: GameId,
        round: u32,
        seat: Seat,
        pick: Element,
        nonce: [u8; 32],
    ) -> ServerMsg {
        self.send_commit(game, round, seat, pick, nonce, false)
            .await
    }

    /// A commit escrowing its reveal: the pick and nonce go with the commitment.
    pub async fn commit_escrowed(
        &mut self,
        game: GameId,
        round: u32,
        seat: Seat,
        pick: Element,
        nonce: [u8; 32],
    ) -> ServerMsg {
        self.send_commit(game, round, seat, pick, nonce, true).await
    }

    async fn send_commit(
        &mut self,
        game: GameId,
        round: u32,
        seat: Seat,
        pick: Element,
        nonce: [u8; 32],
        escrow: bool,
    ) -> ServerMsg {
        let id = self.id();
        let commitment = commitment::make(&game.0, round, seat, pick, &nonce).to_vec();
        self.request(ClientMsg::Commit {
            id,
            game_id: game,
            round,
            commitment,
            pick: escrow.then_some(pick),
            nonce: escrow.then(|| nonce.to_vec()),
        })
        .await
    }

    pub async fn reveal(
        &mut self,
        game: GameId,
        round: u32,
        pick: Element,
        nonce: [u8; 32],
    ) -> ServerMsg {
        let id = self.id();
        self.request(ClientMsg::Reveal {
            id,
            game_id: game,
            round,
            pick,
            nonce: nonce.to_vec(),
        })
        .await
    }
}

pub fn assert_ok(msg: &ServerMsg) {
    assert!(
        matches!(msg, ServerMsg::Ok { .. }),
        "expected ok, got {msg:?}"
    );
}

pub fn assert_error(msg: &ServerMsg, code: elementals_protocol::ErrorCode) {
    match msg {
        ServerMsg::Error { code: c, .. } => assert_eq!(*c, code, "wrong error: {msg:?}"),
        other => panic!("expected error {code}, got {other:?}"),
    }
}

/// Two registered players paired in the classic pool; returns them in seat order.
pub async fn paired_players(
    server: &TestServer,
    a: &str,
    b: &str,
) -> (TestClient, TestClient, GameInfo) {
    paired_at(server.addr, a, b).await
}

/// `paired_players` on a server at `addr` (one started as a child process, say).
pub async fn paired_at(addr: SocketAddr, a: &str, b: &str) -> (TestClient, TestClient, GameInfo) {
    let mut ca = TestClient::connect_at(addr).await;
    ca.register(a).await;
    let mut cb = TestClient::connect_at(addr).await;
    cb.register(b).await;
    ca.join_pool(Variant::CLASSIC, "blitz").await;
    cb.join_pool(Variant::CLASSIC, "blitz").await;
    let (game, seat_a) = ca.game_start().await;
    let (_, seat_b) = cb.game_start().await;
    assert_ne!(seat_a, seat_b);
    if seat_a == Seat::One {
        (ca, cb, game)
    } else {
        (cb, ca, game)
    }
}

/// Play one round fully: both commit, both reveal; returns the round_result seen by `one`.
pub async fn play_round(
    one: &mut TestClient,
    two: &mut TestClient,
    game: GameId,
    round: u32,
    picks: (Element, Element),
) -> ServerMsg {
    let n1 = rand::random::<[u8; 32]>();
    let n2 = rand::random::<[u8; 32]>();
    assert_ok(&one.commit(game, round, Seat::One, picks.0, n1).await);
    assert_ok(&two.commit(game, round, Seat::Two, picks.1, n2).await);
    one.expect(
        "reveal_phase",
        |m| matches!(m, ServerMsg::RevealPhase { round: r, .. } if *r == round),
    )
    .await;
    two.expect(
        "reveal_phase",
        |m| matches!(m, ServerMsg::RevealPhase { round: r, .. } if *r == round),
    )
    .await;
    assert_ok(&one.reveal(game, round, picks.0, n1).await);
    assert_ok(&two.reveal(game, round, picks.1, n2).await);
    two.expect(
        "round_result",
        |m| matches!(m, ServerMsg::RoundResult { record, .. } if record.round == round),
    )
    .await;
    one.expect(
        "round_result",
        |m| matches!(m, ServerMsg::RoundResult { record, .. } if record.round == round),
    )
    .await
}

/// A rated game that both players left in the middle of round 2: see `play_and_leave_at`.
pub struct LeftGame {
    pub game: GameInfo,
    /// Seat one's and seat two's session tokens.
    pub tokens: (String, String),
    /// Seat one's round-2 nonce (its pick is 3).
    pub nonce: [u8; 32],
}

/// Registers `a` and `b` at `addr`, pairs them by `a`'s rated seek of `time_control` (the
/// game runs where `addr` is), plays round 1, lets seat one commit in round 2 (pick 3), and
/// has both leave: a correspondence game left so goes to sleep.
pub async fn play_and_leave_at(
    addr: SocketAddr,
    a: &str,
    b: &str,
    time_control: TimeControl,
) -> LeftGame {
    let (left, one, two) = play_to_round_two_at(addr, a, b, time_control).await;
    one.close().await;
    two.close().await;
    left
}

/// `play_and_leave_at`, but both players stay: their clients, seat one's first.
pub async fn play_to_round_two_at(
    addr: SocketAddr,
    a: &str,
    b: &str,
    time_control: TimeControl,
) -> (LeftGame, TestClient, TestClient) {
    let mut ca = TestClient::connect_at(addr).await;
    ca.register(a).await;
    let mut cb = TestClient::connect_at(addr).await;
    cb.register(b).await;
    let id = ca.id();
    let created = ca
        .request(ClientMsg::CreateSeek {
            id,
            variant: Variant::CLASSIC,
            time_control,
            rated: true,
        })
        .await;
    let ServerMsg::SeekCreated { seek, .. } = created else {
        panic!("{created:?}")
    };
    let (id, seek_id) = (cb.id(), seek.seek_id);
    assert_ok(&cb.request(ClientMsg::AcceptSeek { id, seek_id }).await);
    let (game, seat_a) = ca.game_start().await;
    cb.game_start().await;
    let (mut one, mut two) = match seat_a {
        Seat::One => (ca, cb),
        Seat::Two => (cb, ca),
    };
    let game_id = game.game_id;
    play_round(&mut one, &mut two, game_id, 1, (1, 2)).await;
    let nonce = rand::random::<[u8; 32]>();
    assert_ok(&one.commit(game_id, 2, Seat::One, 3, nonce).await);
    let tokens = (one.token.clone().unwrap(), two.token.clone().unwrap());
    let left = LeftGame {
        game,
        tokens,
        nonce,
    };
    (left, one, two)
}

/// Round 2 of a game `play_and_leave_at` left, once both have committed (seat two with
/// pick 1 and `nonce_two`): both reveal, seat one hears the result and resigns.
pub async fn reveal_round_two_and_resign(
    left: &LeftGame,
    one: &mut TestClient,
    two: &mut TestClient,
    nonce_two: [u8; 32],
) {
    let game_id = left.game.game_id;
    assert_ok(&one.reveal(game_id, 2, 3, left.nonce).await);
    assert_ok(&two.reveal(game_id, 2, 1, nonce_two).await);
    one.expect(
        "round 2's result",
        |m| matches!(m, ServerMsg::RoundResult { record, .. } if record.round == 2),
    )
    .await;
    one.resign(game_id).await;
}
