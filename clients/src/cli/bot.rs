//! `bot`: sign in, then play N rated games from the pool with a strategy, printing each
//! result and the rating after it.

use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use elementals_client::render::seat_name;
use elementals_client::{
    strategy_by_name, wait_for_game_start, Client, ClientError, GameSummary, Player, PlayerOptions,
    Strategy,
};
use elementals_protocol::{ErrorCode, Variant};

use super::{seated_snapshot, AccountArgs, GameArgs, ServerArg, StateArg};

#[derive(Args, Debug)]
pub struct BotArgs {
    #[command(flatten)]
    pub server: ServerArg,
    #[command(flatten)]
    pub account: AccountArgs,
    #[command(flatten)]
    pub game: GameArgs,
    /// How many complete games to play.
    #[arg(long, default_value_t = 1)]
    pub games: u32,
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
    let (client, session) = args.account.sign_in(&args.server).await?;
    println!(
        "{} signed in, rating {:.3}",
        session.account.name, session.account.rating
    );
    let nonces = args.state.store(&session.account.name)?;
    let options = PlayerOptions {
        think_time: Duration::from_millis(args.think_ms),
        escrow: args.escrow,
        nonces,
        ..PlayerOptions::default()
    };
    let mut player = Player::with_options(args.strategy.build(), options);
    if let Some(game_id) = session.game_id {
        // Back in a game this account was playing (a restart): finish it first.
        let state = seated_snapshot(&client, game_id).await?;
        let seat = state
            .seat()
            .context("a seated account's snapshot names its seat")?;
        let opponent = state.info().players.get(seat.other()).name.clone();
        println!("resuming game {game_id}");
        let summary = player.play_from(&client, state).await?;
        println!("{}", report("resumed", &opponent, &summary));
    }
    let preset = args.game.time_control.name();
    for number in 1..=args.games {
        join_pool(&client, args.game.variant, preset).await?;
        let start = wait_for_game_start(&client).await?;
        let opponent = start.game.players.get(start.seat.other()).name.clone();
        let summary = player.play_game(&client, start).await?;
        let label = format!("{number}/{}", args.games);
        println!("{}", report(&label, &opponent, &summary));
    }
    Ok(())
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
fn report(label: &str, opponent: &str, s: &GameSummary) -> String {
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
        "game {label} {}: {outcome} as {} vs {opponent} ({:?}) after {} rounds; {rating}",
        s.game_id,
        seat_name(s.seat),
        s.result.reason,
        s.rounds
    )
}
