//! `watch`: follow a live game as a spectator, printing the board after every round
//! until the game ends. Without a game id, list the live games.

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use elementals_client::{apply_or_resync, render, wait_for_rating, Client, ClientError, GameState};
use elementals_protocol::messages::GameId;
use elementals_protocol::{ErrorCode, ServerMsg};

use super::ServerArg;

#[derive(Args, Debug)]
pub struct WatchArgs {
    #[command(flatten)]
    pub server: ServerArg,
    /// The game to watch; list live games when absent.
    pub game_id: Option<GameId>,
}

pub async fn run(args: WatchArgs) -> anyhow::Result<()> {
    let client = args.server.connect().await?;
    let Some(game_id) = args.game_id else {
        let games = signed_in(&client, async |c| c.list_games().await).await?;
        if games.is_empty() {
            println!("no live games");
        }
        for g in games {
            println!(
                "{}  {} vs {}  {}/{}/{}  round {}  spectators {}",
                g.game_id,
                g.players.one.name,
                g.players.two.name,
                g.variant.number,
                g.variant.range,
                g.variant.distance,
                g.round,
                g.spectators
            );
        }
        return Ok(());
    };
    let snapshot = signed_in(&client, async |c| c.watch(game_id).await).await?;
    let mut state = GameState::from_snapshot(snapshot, None);
    for record in state.history() {
        println!("{}", render::round_line(record));
    }
    print!("{}", render::game(&state));
    while !state.is_over() {
        let event = client.next_event().await.context("the connection closed")?;
        apply_or_resync(&client, &mut state, &event).await?;
        if let ServerMsg::RoundResult {
            record, game_id: g, ..
        } = &event
        {
            if *g == game_id {
                println!("\n{}", render::round_line(record));
                print!("{}", render::game(&state));
            }
        }
    }
    if let Some(result) = state.result() {
        println!("\n{}", render::result_line(state.info(), &result));
    }
    print_ratings(&client, &mut state).await
}

/// After a rated game, wait briefly for the rating update and print it.
async fn print_ratings(client: &Client, state: &mut GameState) -> anyhow::Result<()> {
    wait_for_rating(client, state, Duration::from_secs(5)).await?;
    if let Some(r) = state.ratings() {
        let players = &state.info().players;
        println!(
            "ratings: {} {:.3} -> {:.3}, {} {:.3} -> {:.3}",
            players.one.name,
            r.one.before,
            r.one.after,
            players.two.name,
            r.two.before,
            r.two.after
        );
    }
    Ok(())
}

/// Make a request; if the server wants a session first, take a guest one and retry.
async fn signed_in<T>(
    client: &Client,
    call: impl AsyncFn(&Client) -> Result<T, ClientError>,
) -> anyhow::Result<T> {
    match call(client).await {
        Err(err) if err.code() == Some(ErrorCode::NotAuthenticated) => {
            client.guest().await.context("signing in as a guest")?;
            Ok(call(client).await?)
        }
        other => Ok(other?),
    }
}
