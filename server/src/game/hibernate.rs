//! Hibernation: a game waiting on players who are both away, with its next deadline far
//! off, holds no task. Its actor logs a `Hibernated` step, writes the game's wake-up row
//! (when its next deadline falls) and ends (`actor/sleep.rs`); the registry keeps a small
//! entry (`registry/dormant.rs`) so its players stay seated.
//!
//! A game wakes when a command comes for it (the bus asks the waker installed here, which
//! opens its inbox at once: the command waits there) or when its deadline comes (the
//! sweeper, `sweeper.rs`). Waking reads its log, deletes its row, replays the log and
//! takes the game up where it slept (`GameState::woken`: the round kept, the clocks run
//! on), then starts its actor on the inbox. Concurrent wakes make one actor: only the one
//! that claims the registry's entry (`begin_wake`) wakes it.
//!
//! In cluster mode a sleeping game holds no lease and has no node; any node may wake it.
//! Reading its log there takes its lease in PostgreSQL (`db/pg/step_log/wake.rs`), so of
//! several nodes waking it at once one reads it and runs it; the others `follow` it: what
//! waited in their inboxes goes to the winner once the directory names its node.

use std::time::Duration;

use elementals_protocol::ErrorCode;
use tokio::sync::watch;

use super::actor::spawn_woken;
use super::restore::{rebuild, Unrestorable};
use super::GameServices;
use crate::bus::{GameInbox, Waker};
use crate::record::GameLog;
use elementals_protocol::messages::GameId;

/// Installs the waker on the registry's bus: a command for a sleeping game wakes it.
/// Taken off again at shutdown (`bus.set_waker(None)`): it holds the services.
pub fn install_waker(services: &GameServices) {
    let bus = services.registry.bus();
    let services = services.clone();
    let waker: Waker = std::sync::Arc::new(move |game_id| {
        match services.registry.begin_wake(game_id) {
            Some((inbox, done)) => {
                let services2 = services.clone();
                services
                    .tasks
                    .spawn(wake(services2, game_id, inbox, done, None));
                true
            }
            // Being woken already (its inbox is open), or not asleep.
            None => services.registry.is_dormant(&game_id),
        }
    });
    bus.set_waker(Some(waker));
}

/// Wakes a game whose waking this task has claimed: `log` if the caller has read it
/// already (the sweeper reads a batch's logs in one pass), else read here.
pub(super) async fn wake(
    services: GameServices,
    game_id: GameId,
    inbox: GameInbox,
    done: watch::Sender<bool>,
    log: Option<GameLog>,
) {
    let read = match log {
        Some(log) => Ok(Some(log)),
        None => services
            .db
            .game_logs(vec![game_id])
            .await
            .map(|logs| logs.into_iter().next()),
    };
    let log = match read {
        Ok(Some(log)) => log,
        Ok(None) if !services.registry.alone() => {
            let tasks = services.tasks.clone();
            tasks.spawn(follow(services, game_id, inbox, done));
            return;
        }
        Ok(None) => {
            let _ = services.db.woken(game_id).await;
            return failed(&services, game_id, inbox, done, true, "no log");
        }
        Err(e) => return failed(&services, game_id, inbox, done, false, &e.to_string()),
    };
    // Before it runs: a game awake has no row (a crash after this finds it in the log
    // alone, and restores it at the next start).
    if let Err(e) = services.db.woken(game_id).await {
        return failed(&services, game_id, inbox, done, false, &e.to_string());
    }
    match rebuild(&log, &services) {
        Ok((state, setup)) => {
            spawn_woken(state, setup, services.clone(), inbox);
            services.registry.woke(game_id);
            services.metrics.note_woken();
            tracing::debug!(%game_id, "game woken");
        }
        Err(Unrestorable::Unreadable(e) | Unrestorable::Broken(_, e)) => {
            return failed(&services, game_id, inbox, done, true, &e);
        }
        Err(Unrestorable::Ended(_)) => {
            return failed(&services, game_id, inbox, done, true, "its end is logged");
        }
    }
    done.send_replace(true);
}

/// How long a node that lost a wake waits for the directory to name the winner's node.
const FOLLOW_WAIT: Duration = Duration::from_secs(5);

/// Cluster mode: another node woke the game (or it sleeps no more). Once the directory
/// names the node that runs it, or after `FOLLOW_WAIT` if none does (then the directory's
/// word that it sleeps is dropped, unless it went to sleep again meanwhile), what waits in
/// the inbox opened here goes on through the bus: to that node, or answered there.
async fn follow(
    services: GameServices,
    game_id: GameId,
    mut inbox: GameInbox,
    done: watch::Sender<bool>,
) {
    let registry = &services.registry;
    let (_, asleep_as) = registry.where_awake(game_id);
    let give_up = tokio::time::Instant::now() + FOLLOW_WAIT;
    // Looked at again each time the directory takes in another node's game: subscribed
    // before the first look, so that no game opened after it goes unseen.
    let mut opened = registry.games_opened();
    let found = loop {
        opened.borrow_and_update();
        if registry.where_awake(game_id).0.is_some() {
            break true;
        }
        let heard = async {
            if opened.changed().await.is_err() {
                // Nobody else runs games (a single node): only the wait ends it.
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            () = heard => {}
            () = tokio::time::sleep_until(give_up) => break false,
            () = services.stop.cancelled() => break false,
        }
    };
    tracing::debug!(%game_id, found, "another node woke the game");
    let bus = registry.bus();
    bus.close_game(game_id);
    registry.wake_lost(game_id, asleep_as.filter(|_| !found));
    inbox.players.close();
    inbox.spectators.close();
    let mut left = Vec::new();
    while let Ok(cmd) = inbox.players.try_recv() {
        left.push(cmd);
    }
    while let Ok(cmd) = inbox.spectators.try_recv() {
        left.push(cmd);
    }
    for cmd in left {
        bus.to_game(game_id, cmd).await;
    }
    done.send_replace(true);
}

/// The game could not be woken: what waits in its inbox is answered `internal`, and it
/// sleeps on, or (`gone`: nothing to wake) is forgotten.
fn failed(
    services: &GameServices,
    game_id: GameId,
    mut inbox: GameInbox,
    done: watch::Sender<bool>,
    gone: bool,
    error: &str,
) {
    tracing::error!(%game_id, error, "cannot wake the hibernated game");
    let bus = services.registry.bus();
    bus.close_game(game_id);
    services.registry.wake_failed(game_id, gone);
    inbox.players.close();
    inbox.spectators.close();
    while let Ok(cmd) = inbox
        .players
        .try_recv()
        .or_else(|_| inbox.spectators.try_recv())
    {
        if let Some(reply) = cmd.reply_to() {
            let message = "the game could not be woken from storage; try again".to_owned();
            bus.answer(reply, Err((ErrorCode::Internal, message)));
        }
    }
    done.send_replace(true);
}

#[cfg(test)]
mod tests;
