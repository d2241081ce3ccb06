//! The player driver against a scripted referee that plays seat two of the seed's example
//! game and checks every commitment the client opens.

mod support;

use elementals_client::protocol::commitment;
use elementals_client::protocol::messages::{
    Clocks, EndReason, GameId, GameInfo, GameResult, GameSnapshot, Phase, PlayerInfo, RoundRecord,
    SeatPair,
};
use elementals_client::protocol::rating::RatingChange;
use elementals_client::protocol::{Board, ClientMsg, Seat, ServerMsg, TimeControl, Variant};
use elementals_client::{play_game, wait_for_game_start, Client, Sequence};

fn clocks() -> Clocks {
    Clocks {
        one_ms: 60_000,
        two_ms: 60_000,
        running: SeatPair::new(true, true),
    }
}

fn game_info() -> GameInfo {
    let player = |name: &str| PlayerInfo {
        name: name.into(),
        rating: 1.0,
        guest: false,
        bot: false,
    };
    GameInfo {
        game_id: GameId::new_random_from([42; 16]),
        variant: Variant::CLASSIC,
        time_control: TimeControl::BLITZ,
        rated: true,
        players: SeatPair::new(player("ann"), player("referee")),
        started_at: 0,
    }
}

/// The referee's side of one game: seat two picks `two_picks` in turn; the round after
/// `gap_round` starts with a skipped sequence number, so the client must resync.
struct Referee {
    conn: support::MockConn,
    info: GameInfo,
    board: Board,
    seq: u64,
    round: u32,
    rounds: Vec<RoundRecord>,
    two_picks: Vec<u16>,
    commitment: Vec<u8>,
    syncs: u32,
}

impl Referee {
    fn game_id(&self) -> GameId {
        self.info.game_id
    }

    async fn event(&mut self, build: impl FnOnce(GameId, u64) -> ServerMsg) {
        self.seq += 1;
        let msg = build(self.info.game_id, self.seq);
        self.conn.send(&msg).await;
    }

    async fn start_round(&mut self, skip: bool) {
        self.round += 1;
        if skip {
            // This event is "lost": the client sees the next number first.
            self.seq += 1;
        }
        let round = self.round;
        self.event(|game_id, seq| ServerMsg::RoundStart {
            game_id,
            seq,
            round,
            clocks: clocks(),
        })
        .await;
    }

    fn snapshot(&self) -> GameSnapshot {
        GameSnapshot {
            game: self.info.clone(),
            seq: self.seq,
            round: self.round,
            phase: Phase::Commit,
            committed: SeatPair::default(),
            revealed: SeatPair::default(),
            positions: self.board.positions().to_vec(),
            clocks: clocks(),
            rounds: self.rounds.clone(),
            connected: SeatPair::new(true, true),
            spectators: 0,
            draw_offer: None,
            result: None,
        }
    }

    async fn run(mut self, gap_round: u32) -> Self {
        let info = self.info.clone();
        self.conn
            .send(&ServerMsg::GameStart {
                game: info,
                seat: Seat::One,
            })
            .await;
        self.start_round(false).await;
        loop {
            match self.conn.recv().await {
                ClientMsg::Commit {
                    id,
                    game_id,
                    round,
                    commitment,
                    ..
                } => {
                    assert_eq!((game_id, round), (self.game_id(), self.round));
                    self.commitment = commitment;
                    self.conn.send(&ServerMsg::Ok { id }).await;
                    for seat in Seat::BOTH {
                        self.event(|game_id, seq| ServerMsg::Committed {
                            game_id,
                            seq,
                            round,
                            seat,
                            clocks: clocks(),
                        })
                        .await;
                    }
                    self.event(|game_id, seq| ServerMsg::RevealPhase {
                        game_id,
                        seq,
                        round,
                        reveal_ms: 15_000,
                        clocks: clocks(),
                    })
                    .await;
                }
                ClientMsg::Reveal {
                    id,
                    round,
                    pick,
                    nonce,
                    ..
                } => {
                    assert_eq!(round, self.round);
                    let game = self.game_id().0;
                    let opens =
                        commitment::verify(&self.commitment, &game, round, Seat::One, pick, &nonce);
                    assert!(
                        opens,
                        "round {round}: the reveal does not open the commitment"
                    );
                    self.conn.send(&ServerMsg::Ok { id }).await;
                    let two = self.two_picks[self.rounds.len()];
                    let outcome = self.board.play(pick, two).unwrap();
                    let record = RoundRecord {
                        round,
                        picks: SeatPair::new(pick, two),
                        outcome,
                        positions: self.board.positions().to_vec(),
                    };
                    self.rounds.push(record.clone());
                    self.event(|game_id, seq| ServerMsg::RoundResult {
                        game_id,
                        seq,
                        record,
                        clocks: clocks(),
                    })
                    .await;
                    if let Some(winner) = self.board.winner() {
                        return self.finish(winner).await;
                    }
                    self.start_round(round == gap_round).await;
                }
                ClientMsg::Sync { id, game_id } => {
                    assert_eq!(game_id, self.game_id());
                    self.syncs += 1;
                    let snapshot = self.snapshot();
                    self.conn
                        .send(&ServerMsg::Snapshot {
                            id: Some(id),
                            snapshot,
                            seat: Some(Seat::One),
                        })
                        .await;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    async fn finish(mut self, winner: Seat) -> Self {
        let result = GameResult {
            winner: Some(winner),
            reason: EndReason::Edge,
        };
        self.event(|game_id, seq| ServerMsg::GameOver {
            game_id,
            seq,
            result,
            rated: true,
            clocks: clocks(),
        })
        .await;
        let ratings = SeatPair::new(
            RatingChange {
                before: 1.0,
                after: 1.0,
            },
            RatingChange {
                before: 1.0,
                after: 1.5,
            },
        );
        self.event(|game_id, seq| ServerMsg::RatingUpdate {
            game_id,
            seq,
            ratings,
        })
        .await;
        self
    }
}

#[tokio::test]
async fn the_player_commits_reveals_resyncs_and_reports_the_rating() {
    let mut server = support::start().await;
    let client = Client::connect(&server.url).await.unwrap();
    let referee = Referee {
        conn: server.accept().await,
        info: game_info(),
        board: Board::new(Variant::CLASSIC),
        seq: 0,
        round: 0,
        rounds: Vec::new(),
        // The seed's example: (5,2) (1,2) (2,3) (3,2) (5,2), and two wins.
        two_picks: vec![2, 2, 3, 2, 2],
        commitment: Vec::new(),
        syncs: 0,
    };
    let referee = tokio::spawn(referee.run(3));
    let start = wait_for_game_start(&client).await.unwrap();
    assert_eq!(start.seat, Seat::One);
    let summary = play_game(&client, start, Sequence::new(vec![5, 1, 2, 3, 5]))
        .await
        .unwrap();
    let referee = referee.await.unwrap();

    assert_eq!(summary.rounds, 5);
    assert_eq!(summary.won(), Some(false));
    assert_eq!(summary.result.reason, EndReason::Edge);
    assert!(summary.rated);
    assert_eq!(summary.rating_after, Some(1.0));
    assert_eq!(
        referee.syncs, 1,
        "the skipped event forces exactly one resync"
    );
    assert_eq!(referee.board.positions(), &[0, -3, 0, 0, 0]);
}
