//! `elementals`: command-line tools on the client library: bots that play rated games, a
//! terminal player, a spectator view, the leaderboard and a transcript checker. Each subcommand lives in
//! `cli/`; this file only parses arguments and sets up logging.

mod cli;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "elementals",
    version,
    about = "Play, watch and test Elementals"
)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Sign in (registering if needed), join the rated pool and play games automatically.
    Bot(cli::bot::BotArgs),
    /// Follow a live game round by round; without a game id, list the live games.
    Watch(cli::watch::WatchArgs),
    /// Play a game yourself in the terminal.
    Play(cli::play::PlayArgs),
    /// Print the leaderboard.
    Leaderboard(cli::ServerArg),
    /// Check a finished game's signed transcript (a file, or its URL) offline: the
    /// signature, every commitment, every round, the result and the rating change.
    Verify(cli::verify::VerifyArgs),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match Args::parse().command {
        Command::Bot(args) => cli::bot::run(args).await,
        Command::Watch(args) => cli::watch::run(args).await,
        Command::Play(args) => cli::play::run(args).await,
        Command::Leaderboard(args) => cli::leaderboard(args).await,
        Command::Verify(args) => cli::verify::run(args).await,
    }
}
