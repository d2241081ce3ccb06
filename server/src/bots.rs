//! Computer opponents (`play_bot`): players the server runs itself, one account per strength
//! (`bot-easy`, `bot-medium`, `bot-hard`), playing with the protocol crate's strategies.
//!
//! A bot plays as a connection would: its seat has a connection identity on the bus, whose
//! outbox a task of its own reads (`driver`), and its moves go through `PlayerHandle::act`
//! like any player's, so it commits, reveals and runs its clock by the same rules. It sees
//! only what its seat is sent: the other player's pick reaches it in `round_result`.
//!
//! A bot account has `bot` as its `password_hash`, which `PasswordHash` does not parse, so
//! nobody signs in as a bot. A restart voids the round under way (PROTOCOL.md), so a bot
//! keeps its pick and nonce in memory only, for the round it plays.

mod driver;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use elementals_protocol::messages::{GameId, PlayerInfo};
use elementals_protocol::strategy::{Greedy, Minimax, Random, Strategy};
use elementals_protocol::Seat;
use tokio_util::sync::CancellationToken;

use crate::bus::{Bus, ConnId};
use crate::db::{Db, DbResult};
use crate::game::PlayerHandle;
use crate::metrics::Metrics;
use crate::record::AccountId;
use crate::registry::Registry;

/// Names starting with this (any case) are the bots' and refused to players.
pub const BOT_PREFIX: &str = "bot-";

/// The strengths `play_bot` offers, weakest first.
pub const STRENGTHS: [&str; 3] = ["easy", "medium", "hard"];

/// A bot account's `password_hash`: no password matches it.
const NO_PASSWORD: &str = "bot";

/// Bots' connection identities: far above the socket tier's counter, which counts up from
/// 1 and would need centuries to reach it.
const FIRST_BOT_CONN: ConnId = 1 << 62;
static NEXT_BOT_CONN: AtomicU64 = AtomicU64::new(FIRST_BOT_CONN);

/// Whether connection `conn` is a bot's seat (see `FIRST_BOT_CONN`).
pub fn is_bot_conn(conn: ConnId) -> bool {
    conn >= FIRST_BOT_CONN
}

/// Whether `name` is one of the names reserved for bots.
pub fn is_bot_name(name: &str) -> bool {
    name.get(..BOT_PREFIX.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(BOT_PREFIX))
}

/// One bot account.
#[derive(Debug, Clone)]
pub struct Bot {
    pub strength: &'static str,
    pub account: AccountId,
    pub info: PlayerInfo,
}

impl Bot {
    /// The strategy that picks in one round, freshly seeded.
    fn strategy(&self) -> Box<dyn Strategy> {
        match self.strength {
            "easy" => Box::new(Random::new()),
            "medium" => Box::new(Greedy::new()),
            _ => Box::new(Minimax::new()),
        }
    }
}

/// The bots, and how many games they play.
#[derive(Debug)]
pub struct Bots {
    bots: Vec<Bot>,
    /// `bot_games` counts the games the bots play on this node now.
    metrics: Arc<Metrics>,
    /// The cap, which the lobby keeps (`max_games`).
    max_games: usize,
    bus: Arc<dyn Bus>,
    /// Cancelled at shutdown, with the games.
    stop: CancellationToken,
}

/// One game the bots play on this node, counted (`bot_games`) until its bot's task ends.
#[derive(Debug)]
struct Slot(Arc<Metrics>);

impl Slot {
    fn take(metrics: &Arc<Metrics>) -> Slot {
        metrics.bot_games.fetch_add(1, Ordering::Relaxed);
        Slot(metrics.clone())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.bot_games.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A bot's connection in one game: its identity on the bus, and what is sent to it.
pub struct BotConn {
    outbox: crate::outbox::Outbox,
    rx: tokio::sync::mpsc::Receiver<crate::outbox::Outbound>,
}

impl BotConn {
    pub fn conn_id(&self) -> ConnId {
        self.outbox.conn_id()
    }
}

impl Bots {
    /// The bot accounts, created the first time. A name of theirs that a player holds
    /// (registered before the names were reserved) is skipped, with a warning.
    pub async fn load(
        db: &Db,
        bus: Arc<dyn Bus>,
        metrics: Arc<Metrics>,
        stop: CancellationToken,
        max_games: usize,
    ) -> DbResult<Bots> {
        let mut bots = Vec::new();
        for strength in STRENGTHS {
            let name = format!("{BOT_PREFIX}{strength}");
            let row = match db.account_by_name(name.clone()).await? {
                Some(row) => row,
                None => {
                    match db.create_account(name.clone(), NO_PASSWORD.into()).await {
                        Ok(row) => row,
                        // Another server on the same database made it first.
                        Err(crate::db::DbError::NameTaken) => db
                            .account_by_name(name.clone())
                            .await?
                            .ok_or(crate::db::DbError::NameTaken)?,
                        Err(e) => return Err(e),
                    }
                }
            };
            if row.password_hash.as_deref() != Some(NO_PASSWORD) {
                tracing::warn!(%name, "a player holds this bot's name: no {strength} computer opponent");
                continue;
            }
            bots.push(Bot {
                strength,
                account: row.id,
                info: PlayerInfo {
                    name: row.name,
                    rating: row.rating,
                    guest: false,
                    bot: true,
                },
            });
        }
        Ok(Bots {
            bots,
            metrics,
            max_games,
            bus,
            stop,
        })
    }

    pub fn by_strength(&self, strength: &str) -> Option<&Bot> {
        self.bots.iter().find(|b| b.strength == strength)
    }

    pub fn by_account(&self, account: AccountId) -> Option<&Bot> {
        self.bots.iter().find(|b| b.account == account)
    }

    /// The most games against the computer the lobby starts and has not heard the end of.
    pub fn max_games(&self) -> usize {
        self.max_games
    }

    /// A new connection identity for a bot's seat, on the bus.
    pub fn connect(&self) -> BotConn {
        let conn_id = NEXT_BOT_CONN.fetch_add(1, Ordering::Relaxed);
        let (outbox, rx) = crate::outbox::Outbox::new(conn_id, crate::outbox::OUTBOX_CAPACITY);
        self.bus.connect(&outbox);
        BotConn { outbox, rx }
    }

    /// Attaches `conn` to `bot`'s seat and plays it until its game ends (or is gone),
    /// counted meanwhile (`bot_games`).
    pub fn play(&self, bot: &Bot, seat: PlayerHandle, conn: BotConn) {
        let slot = Slot::take(&self.metrics);
        let driver = driver::Driver::new(bot.clone(), seat, self.bus.clone());
        let stop = self.stop.clone();
        tokio::spawn(async move {
            driver.run(conn, stop).await;
            drop(slot);
        });
    }

    /// After the games are restored: the bots take their seats in them again. Not capped:
    /// these games were running before the restart.
    pub fn resume_games(&self, registry: &Registry) -> usize {
        self.resume_games_where(registry, |_| true)
    }

    /// `resume_games` for the live games `only` picks (in cluster mode, those just
    /// claimed from another node).
    pub fn resume_games_where(&self, registry: &Registry, only: impl Fn(&GameId) -> bool) -> usize {
        let mut resumed = 0;
        for game in registry
            .live_games()
            .into_iter()
            .filter(|g| only(&g.game_id))
        {
            let Some(handle) = registry.game(&game.game_id) else {
                continue;
            };
            for seat in [Seat::One, Seat::Two] {
                let player = game.players.get(seat);
                if !player.bot {
                    continue;
                }
                let Some(bot) = self.bots.iter().find(|b| b.info.name == player.name) else {
                    continue;
                };
                self.play(bot, handle.player(seat), self.connect());
                resumed += 1;
            }
        }
        resumed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bot_names_are_told_apart_in_any_case() {
        assert!(is_bot_name("bot-easy"));
        assert!(is_bot_name("BOT-x"));
        assert!(!is_bot_name("bot"));
        assert!(!is_bot_name("robot-easy"));
        assert!(!is_bot_name("bó-easy"));
    }
}
