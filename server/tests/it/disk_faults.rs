//! A real full disk under the real server binary: the database on a small tmpfs of the
//! test's own, filled while a game is played, then freed. Moves are refused `unavailable`
//! and published to nobody while the log cannot take them; the held game goes on once it
//! can; across `kill -9` restarts (one on the full disk) every acknowledged step is there,
//! and nothing that was not acknowledged.
//!
//! Mounting needs root, as CI runs; refused, the test fails and says so.
//!
//! And a failed `fdatasync` of the log (forced by a test hook): the server stops, with a
//! non-zero exit, and starts again on what the log holds.
//!
//! The full disk is SQLite's alone: a PostgreSQL server's disk is not the test's to fill,
//! nor is the shared test server the test's to stop. The failed sync runs on both backends
//! (on PostgreSQL, a commit whose answer is lost).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use crate::recovery_support::*;
use elementals_protocol::messages::{GameId, Phase, SeatPair, ServerMsg};
use elementals_protocol::rules::{Seat, Variant};
use elementals_protocol::ErrorCode;

/// Room for the database, its WAL and the game log of a few games.
const SIZE: &str = "8m";

/// Seat two's 2 beats seat one's 5: one square towards its edge.
const TWO_WINS: (u16, u16) = (5, 2);

/// A tmpfs mounted for the test, unmounted (lazily, should the killed server still hold
/// a file) when dropped, however the test ends.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount() -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={SIZE}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("cannot run mount");
        assert!(
            mounted.status.success(),
            "this test mounts a tmpfs of its own and must run as root (as CI does); mount said: {}",
            String::from_utf8_lossy(&mounted.stderr)
        );
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file until the filesystem is full; returns it, to free the space again.
    fn fill(&self) -> PathBuf {
        let path = self.path().join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let mut chunk = 1 << 20;
        while chunk > 0 {
            match file.write(&vec![0xa5; chunk]) {
                Ok(0) => chunk /= 2,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::StorageFull => chunk /= 2,
                Err(e) => panic!("filling the disk: {e}"),
            }
        }
        file.sync_all().unwrap();
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount").arg("-l").arg(self.path()).status();
        if !matches!(unmounted, Ok(s) if s.success()) {
            eprintln!("could not unmount {}: {unmounted:?}", self.path().display());
        }
    }
}

/// Whether any of `msgs` is a game's numbered event.
fn any_event(msgs: &[ServerMsg]) -> bool {
    msgs.iter().any(|m| m.seq().is_some())
}

/// Each round logs some 500 bytes, and what the log's file has left in its last page
/// (the most a full disk still lets it write) is at most 4 KiB: a move is refused well
/// before this round.
const LAST_ROUND: u32 = 40;

/// A tie: nobody moves, so the game goes on for as many rounds as the test needs.
const TIE: u16 = 1;

/// Plays round `round` as a tie, move by move, on a full disk. The log's file may still
/// have room in its last page, so the first moves may be taken; once one is refused
/// `unavailable`, every later move of the round is too (kept behind it), and nobody hears
/// of any of them. Returns how many of the four moves were acknowledged.
async fn tie_until_refused(
    one: &mut TestClient,
    two: &mut TestClient,
    g: GameId,
    round: u32,
) -> usize {
    let (n1, n2) = (rand::random(), rand::random());
    let mut acknowledged = 0;
    for step in 0..4 {
        // What the server sent either player so far, before this move.
        one.received_before_pong().await;
        two.received_before_pong().await;
        let answer = match step {
            0 => one.commit(g, round, Seat::One, TIE, n1).await,
            1 => two.commit(g, round, Seat::Two, TIE, n2).await,
            2 => one.reveal(g, round, TIE, n1).await,
            _ => two.reveal(g, round, TIE, n2).await,
        };
        if acknowledged == step && matches!(answer, ServerMsg::Ok { .. }) {
            acknowledged += 1;
            continue;
        }
        assert_error(&answer, ErrorCode::Unavailable);
        assert!(!any_event(&one.received_before_pong().await));
        assert!(!any_event(&two.received_before_pong().await));
    }
    acknowledged
}

/// SQLite only (see the file's head).
#[tokio::test]
async fn on_a_full_disk_moves_are_refused_and_held_and_every_acknowledged_step_survives() {
    let disk = Tmpfs::mount();
    let db = Database::in_dir(disk.path());
    let server = ServerProcess::start(&db).await;
    let (mut one, mut two, game) = paired_at(server.addr, "ada07", "bea07").await;
    let g = game.game_id;
    play_round(&mut one, &mut two, g, 1, (TIE, TIE)).await;

    // The disk fills; rounds are played until a move is refused.
    let filler = disk.fill();
    let mut round = 2;
    while tie_until_refused(&mut one, &mut two, g, round).await == 4 {
        round += 1;
        assert!(round < LAST_ROUND, "no move was refused on a full disk");
    }
    server.until_health(503).await;
    // Rounds whose last reveal was acknowledged; the round under way was not resolved.
    let resolved = round as usize - 1;

    // Killed while the moves wait: they were never acknowledged, and they are not there
    // after the restart, which happens on the full disk and needs no help.
    let tokens = tokens(&one, &two);
    server.kill().await;
    drop((one, two));
    let server = ServerProcess::start_answering(&db).await;
    std::fs::remove_file(&filler).unwrap();
    server.until_health(200).await;
    let (mut one, snapshot) = resume_at(server.addr, &tokens.0).await;
    let snapshot = snapshot.expect("seated again");
    assert_eq!((snapshot.round, snapshot.phase), (round, Phase::Commit));
    assert_eq!(snapshot.committed, SeatPair::new(false, false));
    assert_eq!(snapshot.rounds.len(), resolved, "every acknowledged round");
    let (mut two, _) = resume_at(server.addr, &tokens.1).await;
    for player in [&mut one, &mut two] {
        player.received_before_pong().await;
    }

    // Full again: the round's moves from the refused one on are kept, the clocks held.
    let filler = disk.fill();
    let refused_at = loop {
        let acknowledged = tie_until_refused(&mut one, &mut two, g, round).await;
        if acknowledged < 4 {
            break acknowledged;
        }
        round += 1;
        assert!(round < 2 * LAST_ROUND, "no move was refused on a full disk");
    };
    let held = server.http_get("/healthz").await;
    assert_eq!(held.0, 503, "{}", held.1);

    // Space again: the held game goes on by itself, the kept moves in effect.
    std::fs::remove_file(&filler).unwrap();
    let expect_result =
        |m: &ServerMsg| matches!(m, ServerMsg::RoundResult { record, .. } if record.round == round);
    for player in [&mut one, &mut two] {
        player
            .expect("the kept round's result", expect_result)
            .await;
    }
    server.until_health(200).await;
    assert!(refused_at < 4);
    play_round(&mut one, &mut two, g, round + 1, TWO_WINS).await;

    // After another kill -9, every round acknowledged or played once the log took it.
    server.kill().await;
    let server = ServerProcess::start(&db).await;
    let (_one, snapshot) = resume_at(server.addr, &tokens.0).await;
    let snapshot = snapshot.expect("seated again");
    assert_eq!(snapshot.rounds.len(), round as usize + 1);
    assert_eq!(snapshot.result, None);
    server.kill().await;
}

#[tokio::test]
async fn a_failed_sync_of_the_log_stops_the_server_and_it_starts_again() {
    for backend in BACKENDS {
        let db = Database::on(backend);
        let server = ServerProcess::start_failing_syncs(&db).await;
        let mut players = Vec::new();
        for name in ["cal07", "dot07"] {
            let mut player = TestClient::connect_at(server.addr).await;
            player.register(name).await;
            players.push(player);
        }
        // Their game's first step cannot be synced: nothing after it could be trusted.
        for player in &mut players {
            player.join_pool(Variant::CLASSIC, "blitz").await;
        }
        let status = server.crashed().await;
        assert!(!status.success() && status.code().is_some(), "{status}");
        let tokens: Vec<String> = players.iter().map(|p| p.token.clone().unwrap()).collect();
        drop(players);
        // Started again, without the fault, on what the log holds (the page cache kept the
        // unsynced step here): the game is there, and it plays.
        let server = ServerProcess::start(&db).await;
        let (mut a, snapshot) = resume_at(server.addr, &tokens[0]).await;
        let seat_a = snapshot.expect("seated in the replayed game");
        let (mut b, _) = resume_at(server.addr, &tokens[1]).await;
        let g = seat_a.game.game_id;
        let a_is_one = seat_a.game.players.one.name == "cal07";
        let (one, two) = if a_is_one {
            (&mut a, &mut b)
        } else {
            (&mut b, &mut a)
        };
        play_round(one, two, g, 1, TWO_WINS).await;
        server.kill().await;
    }
}
