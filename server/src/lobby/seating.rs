//! A game the lobby starts, on the node that runs it: one of its players' nodes, whichever
//! node the lobby runs on (`Bus::start_game` picks it; a single node is its own). The
//! game's actor starts here (so its lease, taken with its first step, is this node's),
//! the computer's seat gets its task here, and a task of its own tells both players
//! (`game_start`) and attaches their connections: nothing waits on the game.

use std::sync::Arc;

use elementals_protocol::messages::{GameInfo, SeatPair, ServerMsg};
use elementals_protocol::rules::Seat;

use super::NewGame;
use crate::bots::Bots;
use crate::bus::{Bus, ReplyTo, Starter};
use crate::game::{spawn_game, GameServices};

/// Installs on the registry's bus what starts a game here at the lobby's word. Taken off
/// again at shutdown (`bus.set_starter(None)`): it holds the services.
pub fn install_starter(services: &GameServices, bots: &Arc<Bots>) {
    let bus = services.registry.bus();
    let services = services.clone();
    let bots = bots.clone();
    let starter: Starter = Arc::new(move |new| start_here(new, &services, &bots));
    bus.set_starter(Some(starter));
}

/// Starts `new` on this node and seats its players.
fn start_here(new: NewGame, services: &GameServices, bots: &Bots) {
    // A start the lobby sent again (`lobby/actor/starting.rs`) for a game that runs
    // already (on this node, or, as the directory says, on another) or has ended here.
    let game_id = new.setup.game_id;
    let registry = &services.registry;
    if registry.game(&game_id).is_some() || registry.finished_game(&game_id).is_some() {
        tracing::info!(%game_id, "the game has started already: not started again");
        return;
    }
    let NewGame {
        setup,
        mut players,
        bot,
    } = new;
    // The computer's seat: a connection of this node, and the bot that plays through it.
    let bot = bot.and_then(|seat| {
        let account = players.get(seat).account;
        let Some(bot) = bots.by_account(account) else {
            tracing::error!(
                account,
                "no bot of that account here: its seat is left empty"
            );
            return None;
        };
        let conn = bots.connect();
        players.get_mut(seat).conn_id = conn.conn_id();
        Some((seat, bot.clone(), conn))
    });
    let info = GameInfo {
        game_id: setup.game_id,
        variant: setup.variant,
        time_control: setup.time_control,
        rated: setup.rated,
        players: SeatPair::new(players.one.info.clone(), players.two.info.clone()),
        started_at: crate::clock::unix_ms(),
    };
    let handle = spawn_game(setup, services.clone());
    if let Some((seat, bot, conn)) = bot {
        bots.play(&bot, handle.player(seat), conn);
    }
    // Seating waits on the game actor, so it runs in its own task.
    let bus: Arc<dyn Bus> = services.registry.bus();
    tokio::spawn(async move {
        for (seat, member) in [(Seat::One, players.one), (Seat::Two, players.two)] {
            let _ = bus.send_msg(
                member.conn_id,
                &ServerMsg::GameStart {
                    game: info.clone(),
                    seat,
                },
            );
            // The game queues the snapshot after `game_start`.
            // A bot's task attaches its seat itself, and so learns if the game has
            // gone meanwhile.
            if crate::bots::is_bot_conn(member.conn_id) {
                continue;
            }
            // Nobody waits for the answer: the member's session is not asking.
            let reply = ReplyTo {
                conn: member.conn_id,
                request_id: None,
                settle: false,
            };
            handle.player(seat).attach(reply, None).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering::Relaxed;

    use elementals_protocol::messages::{GameId, PlayerInfo};
    use elementals_protocol::rules::Variant;
    use elementals_protocol::TimeControl;

    use super::*;
    use crate::db::Db;
    use crate::game::{GameSettings, GameSetup};
    use crate::lobby::Member;
    use crate::metrics::Metrics;
    use crate::record::RecordPlayer;
    use crate::registry::{FinishedGame, Registry};

    #[tokio::test]
    async fn a_start_sent_again_for_a_game_that_runs_or_ended_starts_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("e.db")).unwrap();
        let metrics = Arc::new(Metrics::default());
        let registry = Arc::new(Registry::new());
        let services = GameServices::new(
            db.clone(),
            registry.clone(),
            metrics.clone(),
            GameSettings::default(),
        );
        let bus = registry.bus();
        let bots = Bots::load(&db, bus.clone(), metrics.clone(), services.stop.clone(), 1)
            .await
            .unwrap();
        install_starter(&services, &Arc::new(bots));
        let member = |account, name: &str| Member {
            account,
            info: PlayerInfo {
                name: name.into(),
                rating: 1.0,
                guest: true,
                bot: false,
            },
            conn_id: 1000 + account as u64,
        };
        let players = SeatPair::new(member(1, "ann"), member(2, "bob"));
        let new = NewGame {
            setup: GameSetup {
                game_id: GameId(uuid::Uuid::new_v4()),
                variant: Variant::CLASSIC,
                time_control: TimeControl::BLITZ,
                rated: false,
                players: players.clone().map(|m| RecordPlayer {
                    account_id: m.account,
                    name: m.info.name,
                    guest: true,
                    rating: 1.0,
                }),
            },
            players,
            bot: None,
        };
        bus.start_game(new.clone());
        assert!(registry.game(&new.setup.game_id).is_some());
        bus.start_game(new.clone());
        assert_eq!(metrics.games_started.load(Relaxed), 1);
        assert_eq!(registry.live_game_count(), 1);
        // Ended here (its end told nowhere else): a start sent again starts nothing.
        let (_, recorded) = tokio::sync::watch::channel(true);
        let finished = FinishedGame {
            players: SeatPair::new(1, 2),
            infos: new.players.clone().map(|m| m.info),
            ratings: SeatPair::new(1.0, 1.0),
            variant: Variant::CLASSIC,
            time_control: TimeControl::BLITZ,
            rated: false,
            recorded,
        };
        registry.finish_game(new.setup.game_id, finished);
        bus.start_game(new);
        assert_eq!(metrics.games_started.load(Relaxed), 1);
        assert_eq!(registry.live_game_count(), 0);
        services.stop.cancel();
    }
}
