//! `bot`: sign in, play on every game the account sits in, and meanwhile play N rated
//! games from the pool with a strategy, up to K at once on the one connection
//! (correspondence games; a live game is one at a time, beside any correspondence games),
//! printing each result and the rating after it.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use elementals_client::render::seat_name;
use elementals_client::{
    strategy_by_name, Client, ClientError, GameSummary, Played, Player, PlayerOptions, Strategy,
};
use elementals_protocol::messages::GameId;
use elementals_protocol::{ErrorCode, ServerMsg, Variant};

use super::{seated_games, AccountArgs, GameArgs, Preset, ServerArg, StateArg};

#[derive(Args, Debug)]
pub struct BotArgs {
    #[command(flatten)]
    pub server: ServerArg,
    #[command(flatten)]
    pub account: AccountArgs,
    #[command(flatten)]
    pub game: GameArgs,
    /// How many complete games to play from the pool (besides those it sits in already).
    #[arg(long, default_value_t = 1)]
    pub games: u32,
    /// How many of them to play at once, on one connection: a correspondence preset only
    /// (the server allows up to 50 correspondence games at once, and one live game).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub at_once: u32,
    /// How to pick: uniformly at random, greedy (board-reading softmax), or minimax
    /// (the one-round equilibrium mix).
    #[arg(long, value_enum, default_value_t = StrategyName::Greedy)]
    pub strategy: StrategyName,
    /// Milliseconds to wait before each pick.
    #[arg(long, default_value_t = 0)]
    pub think_ms: u64,
    /// Send each pick and nonce with its commit (escrow: one visit a round; the server sees
    /// the pick at commit time) instead of revealing after both have committed.
    #[arg(long)]
    pub escrow: bool,
    #[command(flatten)]
    pub state: StateArg,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum StrategyName {
    Random,
    Greedy,
    Minimax,
}

impl StrategyName {
    fn build(self) -> Box<dyn Strategy> {
        let name = match self {
            StrategyName::Random => "random",
            StrategyName::Greedy => "greedy",
            StrategyName::Minimax => "minimax",
        };
        strategy_by_name(name).expect("every listed strategy exists")
    }
}

pub async fn run(args: BotArgs) -> anyhow::Result<()> {
    let correspondence = matches!(
        args.game.time_control,
        Preset::Corr1d | Preset::Corr3d | Preset::Corr7d
    );
    anyhow::ensure!(
        args.at_once == 1 || correspondence,
        "--at-once above 1 needs a correspondence --time-control: a player has one live game \
         at a time"
    );
    let (client, session) = args.account.sign_in(&args.server).await?;
    println!(
        "{} signed in, rating {:.3}",
        session.account.name, session.account.rating
    );
    let nonces = args.state.store(&session.account.name, &session.seated())?;
    let options = PlayerOptions {
        think_time: Duration::from_millis(args.think_ms),
        escrow: args.escrow,
        nonces,
        ..PlayerOptions::default()
    };
    let mut player = Player::with_options(args.strategy.build(), options);
    // Each game's line says which it was: `N/TOTAL` for the pool's, `resumed` for one
    // this account was playing already (a restart), played on beside the new ones.
    let mut labels: HashMap<GameId, String> = HashMap::new();
    for state in seated_games(&client, &session).await? {
        println!("resuming game {}", state.game_id());
        labels.insert(state.game_id(), "resumed".to_owned());
        player.add(&client, state).await?;
    }
    let preset = args.game.time_control.name();
    let (mut started, mut queued) = (0, false);
    loop {
        // Live and correspondence games are counted apart, as the server limits them: a
        // live game may start beside correspondence games that wait.
        let alike = player
            .states()
            .filter(|s| s.info().time_control.is_correspondence() == correspondence)
            .count();
        let room = alike < args.at_once as usize;
        if !queued && started < args.games && room {
            join_pool(&client, args.game.variant, preset).await?;
            queued = true;
        }
        if !queued && player.playing().is_empty() {
            return Ok(());
        }
        match player.next(&client).await? {
            Played::Started(start) => {
                let game_id = start.game.game_id;
                if labels.contains_key(&game_id) {
                    continue;
                }
                // Paired: the pool's queue holds this player no more.
                queued = false;
                started += 1;
                labels.insert(game_id, format!("{started}/{}", args.games));
                let opponent = &start.game.players.get(start.seat.other()).name;
                println!("started game {game_id} against {opponent}");
            }
            Played::Finished(summary) => {
                let label = labels
                    .remove(&summary.game_id)
                    .unwrap_or_else(|| "other".to_owned());
                println!("{}", report(&label, &summary));
            }
            Played::Other(ServerMsg::RematchOffered { game_id, .. }) => {
                // The bot plays from the pool; the offer's maker hears at once.
                if let Err(err) = client.decline_rematch(game_id).await {
                    tracing::info!(%game_id, %err, "declining a rematch refused");
                }
            }
            Played::Other(_) => {}
        }
    }
}

/// Join the rated pool; a seat in a game that is just ending may still be held for a
/// moment, so `already_in_game` is retried a few times.
async fn join_pool(client: &Client, variant: Variant, preset: &str) -> anyhow::Result<()> {
    let mut tries = 0;
    loop {
        match client.join_pool(variant, preset, true).await {
            Ok(_) => return Ok(()),
            Err(ClientError::Server {
                code: ErrorCode::AlreadyInGame,
                ..
            }) if tries < 20 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(err) => return Err(err).context("joining the pool"),
        }
    }
}

/// A game's line; `label` is `N/TOTAL`, or `resumed` for a game the bot came back to.
fn report(label: &str, s: &GameSummary) -> String {
    let outcome = match s.won() {
        Some(true) => "won",
        Some(false) => "lost",
        None => "drew",
    };
    let rating = match (s.rated, s.rating_after) {
        (_, Some(after)) => format!("rating {after:.3}"),
        (true, None) => "rating not yet recorded".to_owned(),
        (false, None) => "unrated".to_owned(),
    };
    format!(
        "game {label} {}: {outcome} as {} vs {} ({:?}) after {} rounds; {rating}",
        s.game_id,
        seat_name(s.seat),
        s.opponent,
        s.result.reason,
        s.rounds
    )
}
