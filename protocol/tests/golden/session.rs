//! The example session of PROTOCOL.md: alice (seat one) against bob, the seed's game,
//! played by hand the way the rules say.

use elementals_protocol::commitment::{self, NONCE_LEN};
use elementals_protocol::messages::{
    Account, Clocks, EndReason, GameId, GameInfo, GameResult, GameSnapshot, Limits, Phase,
    PlayerInfo, RoundRecord, SeatPair,
};
use elementals_protocol::rating::rate_win;
use elementals_protocol::wire::{self, MAX_CLIENT_MESSAGE_BYTES};
use elementals_protocol::{
    Board, ClientMsg, Seat, ServerMsg, TimeControl, Variant, PROTOCOL_VERSION,
};

const GAME: &str = "6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab";
/// 2026-01-01T00:00:00Z.
const STARTED_AT: u64 = 1_767_225_600_000;
const TOKEN: &str = "7a3c9e1f7a3c9e1f7a3c9e1f7a3c9e1f7a3c9e1f7a3c9e1f7a3c9e1f7a3c9e1f";
/// The seed's example picks, (player one, player two).
const PICKS: [(u16, u16); 5] = [(5, 2), (1, 2), (2, 3), (3, 2), (5, 2)];

pub(crate) fn game_id() -> GameId {
    GAME.parse().unwrap()
}

/// Alice's nonce for `round`. Fixed here to be reproducible; a real client draws 32
/// fresh random bytes for every pick.
pub(crate) fn nonce(round: u32) -> [u8; NONCE_LEN] {
    [0x10 * round as u8 + 1; NONCE_LEN]
}

fn alice_commitment(round: u32, pick: u16) -> Vec<u8> {
    commitment::make(&game_id().0, round, Seat::One, pick, &nonce(round)).to_vec()
}

fn players() -> SeatPair<PlayerInfo> {
    let info = |name: &str| PlayerInfo {
        name: name.into(),
        rating: 1.3,
        guest: false,
        bot: false,
    };
    SeatPair::new(info("alice"), info("bob"))
}

fn game_info() -> GameInfo {
    GameInfo {
        game_id: game_id(),
        variant: Variant::CLASSIC,
        time_control: TimeControl::BLITZ,
        rated: true,
        players: players(),
        started_at: STARTED_AT,
    }
}

fn limits() -> Limits {
    Limits {
        max_message_bytes: MAX_CLIENT_MESSAGE_BYTES as u32,
        max_messages_per_s: 20,
        heartbeat_ms: 20_000,
        idle_timeout_ms: 60_000,
        max_rounds: 1_000,
        first_commit_ms: 30_000,
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Frame {
    ToServer(ClientMsg),
    ToClient(ServerMsg),
}

/// How long alice and bob take to commit and to reveal in every round (alice is quicker).
const ALICE_COMMIT_MS: u64 = 4_000;
const BOB_COMMIT_MS: u64 = 6_500;
const ALICE_REVEAL_MS: u64 = 1_200;
const BOB_REVEAL_MS: u64 = 1_900;

/// The game as alice's connection sees it, played by hand the way the rules say.
struct Table {
    frames: Vec<Frame>,
    board: Board,
    /// Both banks; a bank runs only while its seat's commit or reveal is outstanding, and
    /// not at all in round 1's commit phase (the first-commit window governs that).
    banks: [u64; 2],
    seq: u64,
    next_id: u32,
    rounds: Vec<RoundRecord>,
    /// The snapshot a connection resuming at the start of round 3 would get.
    resumed: Option<GameSnapshot>,
}

impl Table {
    fn send(&mut self, msg: ClientMsg) {
        self.frames.push(Frame::ToServer(msg));
    }
    fn receive(&mut self, msg: ServerMsg) {
        self.frames.push(Frame::ToClient(msg));
    }
    fn seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }
    fn id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }
    fn clocks(&self, one: bool, two: bool) -> Clocks {
        Clocks {
            one_ms: self.banks[0],
            two_ms: self.banks[1],
            running: SeatPair::new(one, two),
        }
    }
    /// `ms` pass while the seats flagged in `running` think.
    fn spend(&mut self, ms: u64, running: [bool; 2]) {
        for (bank, runs) in self.banks.iter_mut().zip(running) {
            if runs {
                *bank -= ms;
            }
        }
    }
    fn snapshot(&self, round: u32, connected: SeatPair<bool>, running: bool) -> GameSnapshot {
        GameSnapshot {
            game: game_info(),
            seq: self.seq,
            round,
            phase: Phase::Commit,
            committed: SeatPair::new(false, false),
            revealed: SeatPair::new(false, false),
            positions: self.board.positions().to_vec(),
            clocks: self.clocks(running, running),
            rounds: self.rounds.clone(),
            connected,
            spectators: 0,
            draw_offer: None,
            result: None,
        }
    }

    /// One round, from its `round_start` (round 1's was sent before alice was seated) to
    /// its `round_result`.
    fn play_round(&mut self, round: u32, one: u16, two: u16) {
        let g = game_id();
        let banks_run = round > 1;
        if banks_run {
            let (seq, clocks) = (self.seq(), self.clocks(true, true));
            self.receive(ServerMsg::RoundStart {
                game_id: g,
                seq,
                round,
                clocks,
            });
        }
        if round == 3 {
            self.resumed = Some(self.snapshot(round, SeatPair::new(true, true), true));
        }
        let id = self.id();
        self.send(ClientMsg::Commit {
            id,
            game_id: g,
            round,
            commitment: alice_commitment(round, one),
            pick: None,
            nonce: None,
        });
        self.spend(ALICE_COMMIT_MS, [banks_run; 2]);
        // The server answers a move first, in the same write as the events it caused.
        self.receive(ServerMsg::Ok { id });
        let (seq, clocks) = (self.seq(), self.clocks(false, banks_run));
        self.receive(ServerMsg::Committed {
            game_id: g,
            seq,
            round,
            seat: Seat::One,
            clocks,
        });
        self.spend(BOB_COMMIT_MS - ALICE_COMMIT_MS, [false, banks_run]);
        let (seq, clocks) = (self.seq(), self.clocks(false, false));
        self.receive(ServerMsg::Committed {
            game_id: g,
            seq,
            round,
            seat: Seat::Two,
            clocks,
        });
        let (seq, clocks) = (self.seq(), self.clocks(true, true));
        self.receive(ServerMsg::RevealPhase {
            game_id: g,
            seq,
            round,
            reveal_ms: TimeControl::BLITZ.reveal_ms,
            clocks,
        });
        let id = self.id();
        self.send(ClientMsg::Reveal {
            id,
            game_id: g,
            round,
            pick: one,
            nonce: nonce(round).to_vec(),
        });
        self.spend(ALICE_REVEAL_MS, [true, true]);
        self.receive(ServerMsg::Ok { id });
        let (seq, clocks) = (self.seq(), self.clocks(false, true));
        self.receive(ServerMsg::Revealed {
            game_id: g,
            seq,
            round,
            seat: Seat::One,
            clocks,
        });
        self.spend(BOB_REVEAL_MS - ALICE_REVEAL_MS, [false, true]);
        let (seq, clocks) = (self.seq(), self.clocks(false, false));
        self.receive(ServerMsg::Revealed {
            game_id: g,
            seq,
            round,
            seat: Seat::Two,
            clocks,
        });
        let outcome = self.board.play(one, two).unwrap();
        let increment = TimeControl::BLITZ.increment_ms;
        self.banks.iter_mut().for_each(|ms| *ms += increment);
        let record = RoundRecord {
            round,
            picks: SeatPair::new(one, two),
            outcome,
            positions: self.board.positions().to_vec(),
        };
        self.rounds.push(record.clone());
        let (seq, clocks) = (self.seq(), self.clocks(false, false));
        self.receive(ServerMsg::RoundResult {
            game_id: g,
            seq,
            record,
            clocks,
        });
    }
}

/// Everything alice's connection sends and receives, in order, from `hello` to the
/// rating update; and the snapshot she would get on resuming at the start of round 3.
pub(crate) fn session() -> (Vec<Frame>, GameSnapshot) {
    use Frame::{ToClient as S, ToServer as C};
    let tc = TimeControl::BLITZ;
    let frames = vec![
        C(ClientMsg::Hello {
            id: 1,
            protocol_version: PROTOCOL_VERSION,
            client: Some("example-client/1.0".into()),
            batch: false,
        }),
        S(ServerMsg::Welcome {
            id: 1,
            protocol_version: PROTOCOL_VERSION,
            server: "elementals-server 0.1.0".into(),
            limits: limits(),
        }),
        C(ClientMsg::Login {
            id: 2,
            name: "alice".into(),
            password: "correct horse battery".into(),
        }),
        S(ServerMsg::Authenticated {
            id: 2,
            account: Account {
                name: "alice".into(),
                rating: 1.3,
                guest: false,
                wins: 4,
                losses: 3,
                draws: 1,
            },
            token: TOKEN.into(),
            token_expires_at: STARTED_AT - 10_000 + 30 * 24 * 3_600_000,
            game_id: None,
            games: Vec::new(),
        }),
        C(ClientMsg::JoinPool {
            id: 3,
            variant: Variant::CLASSIC,
            time_control: "blitz".into(),
            rated: true,
        }),
        S(ServerMsg::Queued {
            id: 3,
            variant: Variant::CLASSIC,
            time_control: tc,
            rated: true,
        }),
        S(ServerMsg::QueueStatus {
            players_waiting: 1,
            rating_window: 0.25,
            waited_ms: 1_000,
        }),
        S(ServerMsg::GameStart {
            game: game_info(),
            seat: Seat::One,
        }),
    ];
    let mut table = Table {
        frames,
        board: Board::new(Variant::CLASSIC),
        banks: [tc.initial_ms; 2],
        // Round 1's `round_start` and alice's own `presence` came before her seat was
        // attached: she sees them in the snapshot.
        seq: 2,
        next_id: 3,
        rounds: Vec::new(),
        resumed: None,
    };
    let seated = table.snapshot(1, SeatPair::new(true, false), false);
    table.receive(ServerMsg::Snapshot {
        id: None,
        snapshot: seated,
        seat: Some(Seat::One),
    });
    let seq = table.seq();
    table.receive(ServerMsg::Presence {
        game_id: game_id(),
        seq,
        seat: Seat::Two,
        connected: true,
        grace_ms: 30_000,
    });
    for (round, (one, two)) in (1u32..).zip(PICKS) {
        table.play_round(round, one, two);
    }
    assert_eq!(table.board.winner(), Some(Seat::Two), "the seed's game");
    let (seq, clocks) = (table.seq(), table.clocks(false, false));
    table.receive(ServerMsg::GameOver {
        game_id: game_id(),
        seq,
        result: GameResult {
            winner: Some(Seat::Two),
            reason: EndReason::Edge,
        },
        rated: true,
        clocks,
    });
    let (bob, alice) = rate_win(1.3, 1.3);
    let seq = table.seq();
    table.receive(ServerMsg::RatingUpdate {
        game_id: game_id(),
        seq,
        ratings: SeatPair::new(alice, bob),
    });
    (table.frames, table.resumed.unwrap())
}

pub(crate) fn encode(frame: &Frame) -> Vec<u8> {
    match frame {
        Frame::ToServer(msg) => wire::encode(msg),
        Frame::ToClient(msg) => wire::encode(msg),
    }
}

/// The first frame of type `name` in the session.
pub(crate) fn first<'a>(frames: &'a [Frame], name: &str) -> &'a Frame {
    frames
        .iter()
        .find(|f| {
            let bytes = encode(f);
            let value = rmpv::decode::read_value(&mut &bytes[..]).unwrap();
            value.as_map().unwrap()[0].1.as_str() == Some(name)
        })
        .unwrap_or_else(|| panic!("no {name} in the session"))
}

pub(crate) fn client_frame<'a>(frames: &'a [Frame], name: &str) -> &'a ClientMsg {
    match first(frames, name) {
        Frame::ToServer(msg) => msg,
        other => panic!("{other:?} is not from the client"),
    }
}

pub(crate) fn server_frame<'a>(frames: &'a [Frame], name: &str) -> &'a ServerMsg {
    match first(frames, name) {
        Frame::ToClient(msg) => msg,
        other => panic!("{other:?} is not from the server"),
    }
}
