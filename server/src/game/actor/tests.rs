//! The actor driven through its real handles, with real outboxes and a real database in a
//! temporary directory. Time is tokio's paused clock: nothing sleeps for real.
//!
//! Paused time jumps to the next timer whenever every task is waiting, including on the
//! database thread; so accounts are created before any game starts, and tests read frames
//! already queued with `drain` rather than waiting, except where waiting is the point.

mod clocks;
mod correspondence;
mod incident;
mod isolation;
mod lease;
mod play;
mod stall;
mod watch;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use bytes::Bytes;
use elementals_protocol::commitment::{self, NONCE_LEN};
use elementals_protocol::messages::{GameId, GameSnapshot, Phase, SeatPair, ServerMsg};
use elementals_protocol::rules::{Element, Seat, Variant};
use elementals_protocol::{wire, ErrorCode, TimeControl};
use tempfile::TempDir;
use tokio::sync::mpsc;
use tokio::time::Instant;
use uuid::Uuid;

use crate::bus::Bus;
use crate::db::{AccountRow, Db};
use crate::game::MemoryLog;
use crate::game::{spawn_game, GameHandle, GameServices, GameSettings, GameSetup, LogStore};
use crate::game::{Notice, PlayerHandle, ReplyTo, SeatAction};
use crate::metrics::Metrics;
use crate::outbox::{Outbound, Outbox};
use crate::record::RecordPlayer;
use crate::registry::Registry;

/// 60 s banks, 2 s increment, 15 s to reveal; grace (a tenth, floored) is 30 s.
const TC: TimeControl = TimeControl {
    initial_ms: 60_000,
    increment_ms: 2_000,
    reveal_ms: 15_000,
    per_phase_ms: None,
};

static NEXT_CONN: AtomicU64 = AtomicU64::new(1);
static NEXT_REQUEST: AtomicU32 = AtomicU32::new(1);

/// A fresh outbox of `capacity` frames and the receiver a connection's writer would drain.
fn outbox(capacity: usize) -> (Outbox, mpsc::Receiver<Outbound>) {
    Outbox::new(NEXT_CONN.fetch_add(1, Relaxed), capacity)
}

fn decode(frame: &Bytes) -> ServerMsg {
    wire::decode_server(frame).expect("the actor sends valid frames")
}

/// One connection's end of an outbox.
struct Inbox {
    outbox: Outbox,
    rx: mpsc::Receiver<Outbound>,
    /// Frames of an item taken from `rx` and not yet looked at.
    pending: VecDeque<Bytes>,
}

impl Inbox {
    fn new(capacity: usize) -> Inbox {
        let (outbox, rx) = outbox(capacity);
        Inbox {
            outbox,
            rx,
            pending: VecDeque::new(),
        }
    }

    fn take(&mut self, out: Outbound) {
        if let Some((code, reason)) = out.close() {
            panic!("unexpected close {code}: {reason}");
        }
        self.pending.extend(out.frames().iter().cloned());
    }

    /// Every frame queued so far, raw.
    fn raw(&mut self) -> Vec<Bytes> {
        while let Ok(out) = self.rx.try_recv() {
            self.take(out);
        }
        self.pending.drain(..).collect()
    }

    /// Everything queued so far.
    fn drain(&mut self) -> Vec<ServerMsg> {
        self.raw().iter().map(decode).collect()
    }

    /// The next frame, waiting for it (paused time runs on to the next timer meanwhile).
    async fn next(&mut self) -> ServerMsg {
        while self.pending.is_empty() {
            let out = self.rx.recv().await.expect("the outbox is open");
            self.take(out);
        }
        decode(&self.pending.pop_front().expect("a frame"))
    }

    /// Every frame up to and including the game's `GameOver`, waiting for it. (What follows
    /// it, the durable `RatingUpdate`, may already be queued or not: the database's thread
    /// runs on its own.)
    async fn until_game_over(&mut self) -> Vec<ServerMsg> {
        let mut msgs = Vec::new();
        loop {
            let msg = self.next().await;
            let over = matches!(msg, ServerMsg::GameOver { .. });
            msgs.push(msg);
            if over {
                return msgs;
            }
        }
    }

    /// Waits for the game's end, skipping other frames.
    async fn game_over(&mut self) -> ServerMsg {
        loop {
            let msg = self.next().await;
            if matches!(msg, ServerMsg::GameOver { .. }) {
                return msg;
            }
        }
    }
}

/// Puts `outbox`'s connection on `bus` and opens its session's notices: where a game
/// answers request `request_id` of it, and where the session hears that it is answered.
fn asking(
    bus: &dyn Bus,
    outbox: &Outbox,
    request_id: Option<u32>,
) -> (ReplyTo, mpsc::UnboundedReceiver<Notice>) {
    bus.connect(outbox);
    let notices = bus.open_session(outbox.conn_id());
    let reply = ReplyTo {
        conn: outbox.conn_id(),
        request_id,
        settle: true,
    };
    (reply, notices)
}

/// Waits for the word that a request is answered; whether it took effect.
async fn answered(notices: &mut mpsc::UnboundedReceiver<Notice>) -> bool {
    match notices.recv().await {
        Some(Notice::Answered { ok, .. }) => ok,
        None => panic!("the session's notices ended unanswered"),
    }
}

/// A player: its seat-bound handle and its connection's inbox.
struct Player {
    /// The bus its game is on.
    bus: Arc<dyn Bus>,
    handle: PlayerHandle,
    inbox: Inbox,
    /// Another connection of the same player's, which `act` makes its moves from: the
    /// game answers them there, and `inbox` gets only what the game sends the seat.
    asker: tokio::sync::Mutex<Inbox>,
}

fn nonce(round: u32, seat: Seat) -> [u8; NONCE_LEN] {
    [round as u8 ^ (seat.number() << 6); NONCE_LEN]
}

impl Player {
    /// Makes a move from a connection of its own (not the seat's attached one, so the game
    /// answers it there, alone), and returns the answer.
    async fn act(&self, action: SeatAction) -> Result<(), ErrorCode> {
        let mut asker = self.asker.lock().await;
        let id = NEXT_REQUEST.fetch_add(1, Relaxed);
        self.act_as(action, &asker.outbox, id).await;
        match asker.drain().as_slice() {
            [ServerMsg::Ok { id: got }] if *got == id => Ok(()),
            [ServerMsg::Error { id: got, code, .. }] if *got == Some(id) => Err(*code),
            other => panic!("expected the answer to request {id} alone, got {other:?}"),
        }
    }

    /// Makes a move as request `request_id` of the connection behind `outbox`, and waits
    /// until the game has answered it.
    async fn act_as(&self, action: SeatAction, outbox: &Outbox, request_id: u32) {
        let (reply, mut notices) = asking(&*self.bus, outbox, Some(request_id));
        self.handle.act(action, reply, Instant::now()).await;
        // Answered either way; whether it took effect is in the answer.
        answered(&mut notices).await;
    }

    /// Attaches `outbox`'s connection to the seat; the snapshot it was sent.
    async fn attach(&self, outbox: &Outbox) -> GameSnapshot {
        let (reply, mut notices) = asking(&*self.bus, outbox, None);
        self.handle.attach(reply, None).await;
        assert!(answered(&mut notices).await, "attached");
        self.handle.snapshot().await.unwrap()
    }

    fn commitment(&self, round: u32, pick: Element) -> SeatAction {
        let (id, seat) = (self.handle.game_id().0, self.handle.seat());
        let commitment = commitment::make(&id, round, seat, pick, &nonce(round, seat)).to_vec();
        SeatAction::Commit {
            round,
            commitment,
            pick: None,
            nonce: None,
        }
    }

    async fn commit(&self, round: u32, pick: Element) -> Result<(), ErrorCode> {
        self.act(self.commitment(round, pick)).await
    }

    async fn reveal(&self, round: u32, pick: Element) -> Result<(), ErrorCode> {
        let nonce = nonce(round, self.handle.seat()).to_vec();
        self.act(SeatAction::Reveal { round, pick, nonce }).await
    }

    fn drain(&mut self) -> Vec<ServerMsg> {
        self.inbox.drain()
    }
}

/// A database, a registry and metrics shared by the games of one test.
struct Harness {
    services: GameServices,
    /// What the games logged (and which games' appends it refuses).
    log: Arc<MemoryLog>,
    accounts: Vec<AccountRow>,
    _dir: TempDir,
}

impl Harness {
    /// Opens a database with four accounts (two games' worth).
    async fn new() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("t.db")).unwrap();
        let mut accounts = Vec::new();
        for name in ["ann", "bob", "cid", "dee"] {
            let hash = format!("not-a-real-hash-{name}");
            accounts.push(db.create_account(name.into(), hash).await.unwrap());
        }
        let mut services = GameServices::new(
            db,
            Arc::new(Registry::new()),
            Arc::new(Metrics::default()),
            GameSettings::default(),
        );
        let log = Arc::<MemoryLog>::default();
        services.log = LogStore::Memory(log.clone());
        Harness {
            services,
            log,
            accounts,
            _dir: dir,
        }
    }

    fn metrics(&self) -> &Metrics {
        &self.services.metrics
    }

    fn registry(&self) -> &Registry {
        &self.services.registry
    }

    /// Starts a rated CLASSIC game between accounts `first` and `first + 1`, attaches both
    /// players and drains what attaching queued.
    async fn start(&self, first: usize, time_control: TimeControl) -> Game {
        let player = |a: &AccountRow| RecordPlayer {
            account_id: a.id,
            name: a.name.clone(),
            guest: a.guest,
            rating: a.rating,
        };
        let setup = GameSetup {
            game_id: GameId(Uuid::new_v4()),
            variant: Variant::CLASSIC,
            time_control,
            rated: true,
            players: SeatPair::new(
                player(&self.accounts[first]),
                player(&self.accounts[first + 1]),
            ),
        };
        let handle = spawn_game(setup, self.services.clone());
        let seat = |seat| Player {
            bus: self.services.registry.bus(),
            handle: handle.player(seat),
            inbox: Inbox::new(256),
            asker: tokio::sync::Mutex::new(Inbox::new(256)),
        };
        let mut game = Game {
            one: seat(Seat::One),
            two: seat(Seat::Two),
            handle,
        };
        for p in [&game.one, &game.two] {
            p.attach(&p.inbox.outbox).await;
        }
        game.one.drain();
        game.two.drain();
        game
    }
}

struct Game {
    handle: GameHandle,
    one: Player,
    two: Player,
}

impl Game {
    /// Both commit, then both reveal.
    async fn play(&self, round: u32, one: Element, two: Element) {
        self.one.commit(round, one).await.unwrap();
        self.two.commit(round, two).await.unwrap();
        self.one.reveal(round, one).await.unwrap();
        self.two.reveal(round, two).await.unwrap();
    }

    async fn snapshot(&self) -> GameSnapshot {
        self.handle.snapshot().await.unwrap()
    }

    /// The game is over: its snapshot says so, or its actor has already stopped, as it does
    /// once the end is recorded (`after_game`), which may come before the snapshot is asked.
    async fn assert_over(&self) {
        match self.handle.snapshot().await {
            Ok(snapshot) => assert_eq!(snapshot.phase, Phase::Over),
            Err(e) => assert_eq!(e.code, ErrorCode::UnknownGame, "{e:?}"),
        }
    }

    /// Watches the game with `inbox`'s connection; the game as it is once watched.
    async fn watch(&self, inbox: &Inbox) -> GameSnapshot {
        let (reply, mut notices) = asking(&*self.one.bus, &inbox.outbox, None);
        self.handle.spectator().watch(reply).await;
        assert!(answered(&mut notices).await, "watching");
        self.snapshot().await
    }
}

/// The `seq`s of the numbered events among `msgs`.
fn seqs(msgs: &[ServerMsg]) -> Vec<u64> {
    msgs.iter().filter_map(ServerMsg::seq).collect()
}

/// The result and ratedness of a `GameOver`.
fn over(msg: &ServerMsg) -> (Option<Seat>, elementals_protocol::messages::EndReason, bool) {
    match msg {
        ServerMsg::GameOver { result, rated, .. } => (result.winner, result.reason, *rated),
        other => panic!("expected game_over, got {other:?}"),
    }
}
