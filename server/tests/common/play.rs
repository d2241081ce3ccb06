//! What a test client does as a player: sign in, queue, commit, reveal; and the helpers
//! that pair two players and play a round.

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
