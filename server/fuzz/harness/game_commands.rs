// The game actor's fuzz harness, shared by the fuzz target (`fuzz_targets/game_commands.rs`,
// libFuzzer) and by `server/tests/it/fuzz_replay.rs`, which replays the committed inputs in
// `seeds/game_commands` as an ordinary test, so that CI runs these checks and sees the
// harness drift from the server. Each includer brings `arbitrary` into scope.
//
// Arbitrary command sequences against one game actor, through its public handles (the
// pure state machine is private to the server's `game` module): commits and reveals that
// open and that do not, earlier and later rounds, copies, resignations, draws, claims,
// players leaving and coming back, spectators.
//
// Beyond "no panic" (libFuzzer aborts on any panic, even inside the actor's task), every
// frame the game queues must decode; on each outbox the numbered events run without gaps
// after its snapshot; a round's result shows the picks that were revealed and a board
// within the variant's bounds; and once the game is over, no action is accepted.
//
// Real time, not paused: the actor waits on the database thread to log each step, and a
// paused runtime would jump its clock while it waits. Deadlines (2 s and more) therefore
// never fire within one input: timing is left to the state machine's own tests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use arbitrary::Arbitrary;
use elementals_protocol::commitment;
use elementals_protocol::messages::{GameId, SeatPair, ServerMsg};
use elementals_protocol::rules::{Element, Seat, Variant};
use elementals_protocol::wire;
use elementals_protocol::TimeControl;
use elementals_server::db::Db;
use elementals_server::game::{
    spawn_game, GameServices, GameSettings, GameSetup, PlayerHandle, SeatAction,
};
use elementals_server::metrics::Metrics;
use elementals_server::outbox::{Outbound, Outbox};
use elementals_server::record::RecordPlayer;
use elementals_server::registry::Registry;
use tokio::runtime::Runtime;
use tokio::sync::mpsc;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Who {
    One,
    Two,
}

impl Who {
    fn seat(self) -> Seat {
        match self {
            Who::One => Seat::One,
            Who::Two => Seat::Two,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Cmd {
    /// A commitment the harness can open later, for the current round plus `skew`.
    Commit {
        who: Who,
        skew: i8,
        pick: u16,
        nonce: u8,
    },
    /// Any bytes as a commitment.
    CommitBytes {
        who: Who,
        skew: i8,
        bytes: Vec<u8>,
    },
    /// The opponent's last commitment, byte for byte.
    CopyCommit {
        who: Who,
    },
    /// Open this seat's last commitment, optionally tampered with.
    Reveal {
        who: Who,
        skew: i8,
        pick: Option<u16>,
        nonce: Option<u8>,
    },
    /// Any pick and nonce.
    RevealBytes {
        who: Who,
        skew: i8,
        pick: u16,
        nonce: Vec<u8>,
    },
    /// Both seats commit and reveal these picks (modulo the variant): a shortcut deeper.
    PlayRound {
        one: u16,
        two: u16,
    },
    Resign(Who),
    OfferDraw(Who),
    DeclineDraw(Who),
    ClaimWin(Who),
    Attach(Who),
    Detach(Who),
    Watch,
    Unwatch,
    Snapshot,
}

#[derive(Arbitrary, Debug)]
pub struct Input {
    number: u8,
    range: u8,
    distance: u8,
    initial_s: u16,
    increment_s: u8,
    reveal_s: u8,
    rated: bool,
    cmds: Vec<Cmd>,
}

/// Commands per input: enough for long games, few enough that no deadline (2 s and more)
/// passes while one input runs.
const MAX_CMDS: usize = 96;

struct World {
    runtime: Runtime,
    db: Db,
    players: SeatPair<RecordPlayer>,
}

/// This process's database (on tmpfs when there is one: the WAL and its fsyncs cost
/// nothing there). Its companion files (`-wal`, `-shm`, `-gamelog`, …) share the name.
pub fn database_path() -> std::path::PathBuf {
    let name = format!("elementals-fuzz-{}.db", std::process::id());
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        shm.join(name)
    } else {
        std::env::temp_dir().join(name)
    }
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let path = database_path();
        let _ = std::fs::remove_file(&path);
        let db = Db::open(&path).expect("database opens");
        let players = runtime.block_on(async {
            let mut made = Vec::new();
            for name in ["fuzz-one", "fuzz-two"] {
                let row = db
                    .create_account(name.replace('-', "_"), "x".into())
                    .await
                    .expect("account");
                made.push(RecordPlayer {
                    account_id: row.id,
                    name: row.name,
                    guest: false,
                    rating: row.rating,
                });
            }
            let two = made.pop().unwrap();
            SeatPair::new(made.pop().unwrap(), two)
        });
        World {
            runtime,
            db,
            players,
        }
    })
}

fn variant(input: &Input) -> Option<Variant> {
    let number = 3 + (input.number as u16) % 97;
    let range = 1 + (input.range as u16) % Variant::max_range(number).max(1);
    let distance = 1 + (input.distance as u16) % 20;
    Variant::new(number, range, distance).ok()
}

fn time_control(input: &Input) -> TimeControl {
    TimeControl {
        initial_ms: 10_000 + (input.initial_s as u64 * 1000) % 7_190_001,
        increment_ms: (input.increment_s as u64 * 1000) % 60_001,
        reveal_ms: 2_000 + (input.reveal_s as u64 * 1000) % 118_001,
        per_phase_ms: None,
    }
}

/// One connection's view: its outbox, and the last event number it has applied.
struct View {
    outbox: Outbox,
    rx: mpsc::Receiver<Outbound>,
    last_seq: Option<u64>,
}

impl View {
    fn new(conn_id: u64) -> View {
        let (outbox, rx) = Outbox::new(conn_id, 4096);
        View {
            outbox,
            rx,
            last_seq: None,
        }
    }
}

/// A commitment the harness can open: its round, pick, nonce and bytes.
type Opening = (u32, Element, [u8; 32], Vec<u8>);

/// What the harness knows of the game so far.
#[derive(Default)]
struct Known {
    round: u32,
    /// Each seat's last commitment it can open: (round, pick, nonce, bytes).
    committed: [Option<Opening>; 2],
    /// Picks accepted by a reveal, by seat, with their round.
    revealed: [Option<(u32, Element)>; 2],
    over: bool,
}

/// `round` moved by `skew`, within u32.
fn skewed(round: u32, skew: i8) -> u32 {
    (round as i64 + skew as i64).clamp(0, u32::MAX as i64) as u32
}

/// Reads everything queued to `view` and checks it: every frame of every item, as the
/// writer would send them (a delivery of several events is one item).
fn drain(view: &mut View, known: &mut Known, variant: Variant) {
    while let Ok(out) = view.rx.try_recv() {
        for bytes in out.frames() {
            check(bytes, view, known, variant);
        }
    }
}

/// Checks one frame sent to `view`, in the order sent.
fn check(bytes: &[u8], view: &mut View, known: &mut Known, variant: Variant) {
    let msg = wire::decode_server(bytes).expect("the server's frames decode");
    if let ServerMsg::Snapshot { snapshot, .. } = &msg {
        if let Some(last) = view.last_seq {
            assert!(
                snapshot.seq >= last,
                "a snapshot behind events already sent"
            );
        }
        view.last_seq = Some(snapshot.seq);
        assert_eq!(snapshot.positions.len(), variant.number as usize);
        known.over |= snapshot.result.is_some();
        return;
    }
    let Some(seq) = msg.seq() else { return };
    if let Some(last) = view.last_seq {
        assert!(seq <= last + 1, "a gap in the events: {last} then {seq}");
        view.last_seq = Some(last.max(seq));
    }
    match &msg {
        ServerMsg::RoundStart { round, .. } => known.round = known.round.max(*round),
        ServerMsg::RoundResult { record, .. } => {
            assert_eq!(record.positions.len(), variant.number as usize);
            let bound = variant.distance as i16;
            assert!(record.positions.iter().all(|p| p.abs() <= bound));
            for seat in [Seat::One, Seat::Two] {
                if let Some((round, pick)) = known.revealed[seat.index()] {
                    if round == record.round {
                        assert_eq!(*record.picks.get(seat), pick, "the revealed pick");
                    }
                }
            }
        }
        ServerMsg::GameOver { .. } => known.over = true,
        _ => {}
    }
}

async fn act(player: &PlayerHandle, action: SeatAction, known: &Known) -> bool {
    let was_over = known.over;
    // Asked from a connection of its own (not the seat's): the answer comes there alone.
    let (outbox, mut answers) = Outbox::new(u64::MAX, 4);
    player.act_from(&outbox, 1, action).await;
    let answer = answers.try_recv().expect("the answer is queued");
    let ok = match wire::decode_server(&answer.frames()[0]).expect("the answer decodes") {
        ServerMsg::Ok { id: 1 } => true,
        ServerMsg::Error { id: Some(1), .. } => false,
        other => panic!("expected the answer to the move, got {other:?}"),
    };
    assert!(
        !(ok && was_over),
        "an action was accepted after the game ended"
    );
    ok
}

/// Runs one input against a new game and checks everything it sends (panics on a
/// broken invariant).
pub fn run_input(input: Input) {
    let Some(variant) = variant(&input) else {
        return;
    };
    let world = world();
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&n.to_le_bytes());
    id[8..].copy_from_slice(&std::process::id().to_le_bytes().repeat(2));
    let game_id = GameId::new_random_from(id);
    let setup = GameSetup {
        game_id,
        variant,
        time_control: time_control(&input),
        rated: input.rated,
        players: world.players.clone(),
    };
    world.runtime.block_on(async {
        let services = GameServices::new(
            world.db.clone(),
            Arc::new(Registry::new()),
            Arc::new(Metrics::default()),
            GameSettings::default(),
        );
        let game = spawn_game(setup, services);
        let players = [game.player(Seat::One), game.player(Seat::Two)];
        let spectator = game.spectator();
        let mut views = [View::new(1), View::new(2), View::new(3)];
        let mut known = Known {
            round: 1,
            ..Known::default()
        };
        for (i, player) in players.iter().enumerate() {
            assert!(
                player.attach_outbox(&views[i].outbox).await,
                "a new game takes its players"
            );
        }
        for cmd in input.cmds.into_iter().take(MAX_CMDS) {
            run(
                cmd, &players, &spectator, &mut views, &mut known, game_id, variant,
            )
            .await;
            for view in views.iter_mut() {
                drain(view, &mut known, variant);
            }
        }
        act(&players[0], SeatAction::Resign, &known).await;
        tokio::task::yield_now().await;
        for view in views.iter_mut() {
            drain(view, &mut known, variant);
        }
    });
}

async fn run(
    cmd: Cmd,
    players: &[PlayerHandle; 2],
    spectator: &elementals_server::game::SpectatorHandle,
    views: &mut [View; 3],
    known: &mut Known,
    game_id: GameId,
    variant: Variant,
) {
    let player = |who: Who| &players[who.seat().index()];
    match cmd {
        Cmd::Commit {
            who,
            skew,
            pick,
            nonce,
        } => {
            let round = skewed(known.round, skew);
            let nonce = [nonce; 32];
            let bytes = commitment::make(&game_id.0, round, who.seat(), pick, &nonce).to_vec();
            let action = SeatAction::Commit {
                round,
                commitment: bytes.clone(), pick: None, nonce: None, };
            if act(player(who), action, known).await {
                known.committed[who.seat().index()] = Some((round, pick, nonce, bytes));
            }
        }
        Cmd::CommitBytes { who, skew, bytes } => {
            let round = skewed(known.round, skew);
            let action = SeatAction::Commit {
                round,
                commitment: bytes, pick: None, nonce: None, };
            if act(player(who), action, known).await {
                known.committed[who.seat().index()] = None;
            }
        }
        Cmd::CopyCommit { who } => {
            let theirs = known.committed[who.seat().other().index()].clone();
            if let Some((round, _, _, bytes)) = theirs {
                let action = SeatAction::Commit {
                    round,
                    commitment: bytes, pick: None, nonce: None, };
                assert!(
                    !act(player(who), action, known).await,
                    "a copied commitment was accepted"
                );
            }
        }
        Cmd::Reveal {
            who,
            skew,
            pick,
            nonce,
        } => {
            let Some((round, real_pick, real_nonce, _)) =
                known.committed[who.seat().index()].clone()
            else {
                return;
            };
            let round = skewed(round, skew);
            let pick = pick.unwrap_or(real_pick);
            let nonce = nonce.map(|b| [b; 32]).unwrap_or(real_nonce);
            let action = SeatAction::Reveal {
                round,
                pick,
                nonce: nonce.to_vec(),
            };
            if act(player(who), action, known).await {
                known.revealed[who.seat().index()] = Some((round, pick));
            }
        }
        Cmd::RevealBytes {
            who,
            skew,
            pick,
            nonce,
        } => {
            let round = skewed(known.round, skew);
            let action = SeatAction::Reveal { round, pick, nonce };
            if act(player(who), action, known).await {
                known.revealed[who.seat().index()] = Some((round, pick));
            }
        }
        Cmd::PlayRound { one, two } => {
            let round = known.round;
            let picks = [1 + one % variant.number, 1 + two % variant.number];
            for (i, pick) in picks.into_iter().enumerate() {
                let seat = players[i].seat();
                let nonce = [i as u8 + 1; 32];
                let bytes = commitment::make(&game_id.0, round, seat, pick, &nonce).to_vec();
                let action = SeatAction::Commit {
                    round,
                    commitment: bytes.clone(), pick: None, nonce: None, };
                if act(&players[i], action, known).await {
                    known.committed[i] = Some((round, pick, nonce, bytes));
                }
            }
            for (i, player) in players.iter().enumerate() {
                if let Some((r, pick, nonce, _)) = known.committed[i].clone() {
                    let action = SeatAction::Reveal {
                        round: r,
                        pick,
                        nonce: nonce.to_vec(),
                    };
                    if act(player, action, known).await {
                        known.revealed[i] = Some((r, pick));
                    }
                }
            }
        }
        Cmd::Resign(who) => {
            act(player(who), SeatAction::Resign, known).await;
        }
        Cmd::OfferDraw(who) => {
            act(player(who), SeatAction::OfferDraw, known).await;
        }
        Cmd::DeclineDraw(who) => {
            act(player(who), SeatAction::DeclineDraw, known).await;
        }
        Cmd::ClaimWin(who) => {
            act(player(who), SeatAction::ClaimWin, known).await;
        }
        Cmd::Attach(who) => {
            let outbox = &views[who.seat().index()].outbox;
            player(who).attach_outbox(outbox).await;
        }
        Cmd::Detach(who) => {
            let view = &mut views[who.seat().index()];
            player(who).detach(view.outbox.conn_id());
            // Whatever follows comes after a new snapshot.
            view.last_seq = None;
        }
        Cmd::Watch => {
            spectator.watch_outbox(&views[2].outbox).await;
        }
        Cmd::Unwatch => {
            spectator.unwatch(views[2].outbox.conn_id());
            views[2].last_seq = None;
        }
        Cmd::Snapshot => {
            if let Ok(snapshot) = players[0].snapshot().await {
                known.over |= snapshot.result.is_some();
                assert_eq!(snapshot.positions.len(), variant.number as usize);
            }
        }
    }
}
