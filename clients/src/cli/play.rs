//! `play`: a person plays one game in the terminal. The board, the clocks and each
//! round's picks are printed; the player types an element number (or a command) and the
//! client does the commit and, when the round's reveal phase opens, the reveal. With
//! `--state-dir` the pick waiting for its reveal is kept on disk, and a run that signs in
//! seated in a game (a restart) plays that game on and reveals it.

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use elementals_client::render::{self, seat_name};
use elementals_client::{
    apply_or_resync, wait_for_rating, Client, ClientError, GameStart, GameState, NonceStore,
    SealedPick,
};
use elementals_protocol::messages::Phase;
use elementals_protocol::{Seat, ServerMsg};
use tokio::sync::mpsc;

use super::{seated_snapshot, AccountArgs, GameArgs, ServerArg, StateArg};

#[derive(Args, Debug)]
pub struct PlayArgs {
    #[command(flatten)]
    pub server: ServerArg,
    #[command(flatten)]
    pub account: AccountArgs,
    #[command(flatten)]
    pub game: GameArgs,
    /// Play an unrated game.
    #[arg(long)]
    pub unrated: bool,
    #[command(flatten)]
    pub state: StateArg,
}

const HELP: &str = "type an element number to pick it, or: board, draw (offer or accept), \
                    decline (a draw offer), abort (before both have committed in round 1), \
                    resign, help";

pub async fn run(args: PlayArgs) -> anyhow::Result<()> {
    let (client, session) = args.account.sign_in(&args.server).await?;
    println!(
        "signed in as {} (rating {:.3})",
        session.account.name, session.account.rating
    );
    // Every seated game's kept pick stays (a bot run plays the others on); the terminal
    // plays the one `authenticated` names.
    let nonces = args.state.store(&session.account.name, &session.seated())?;
    let state = match session.game_id {
        // Back in a game this account was playing (a restart): play it on.
        Some(game_id) => {
            println!("resuming game {game_id}");
            seated_snapshot(&client, game_id).await?
        }
        None => {
            let preset = args.game.time_control.name();
            client
                .join_pool(args.game.variant, preset, !args.unrated)
                .await
                .context("joining the pool")?;
            println!("waiting for an opponent ({preset})...");
            let start = wait_for_opponent(&client).await?;
            GameState::new(start.game, Some(start.seat))
        }
    };
    let seat = state
        .seat()
        .context("a seated account's snapshot names its seat")?;
    let sealed = match &nonces {
        Some(store) => store.load(state.game_id())?,
        None => None,
    };
    let mut game = Game {
        client: &client,
        seat,
        state,
        sealed,
        nonces,
        prompted: None,
        revealed: None,
    };
    let opponent = &game.state.info().players.get(seat.other()).name;
    println!(
        "game {} against {opponent}: you are player {} and win when an element reaches {}{}",
        game.state.game_id(),
        seat_name(seat),
        if seat == Seat::One { "+" } else { "-" },
        game.state.info().variant.distance
    );
    println!("{HELP}");
    game.run().await
}

async fn wait_for_opponent(client: &Client) -> anyhow::Result<GameStart> {
    loop {
        let event = client.next_event().await.context("the connection closed")?;
        if let Some(start) = GameStart::from_msg(&event) {
            return Ok(start);
        }
        if let ServerMsg::QueueStatus {
            players_waiting,
            waited_ms,
            ..
        } = event
        {
            if waited_ms % 10_000 < 1_000 {
                println!("{players_waiting} waiting, {}s so far", waited_ms / 1000);
            }
        }
    }
}

/// Lines typed by the player, read on a plain thread: a blocked read of the terminal
/// must not keep the runtime from shutting down when the game is over (as tokio's stdin,
/// which reads on the runtime's blocking pool, would). A person types a line at a time,
/// so a small bound never fills in practice; if it does, the reader simply waits.
fn stdin_lines() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel(16);
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    rx
}

struct Game<'a> {
    client: &'a Client,
    seat: Seat,
    state: GameState,
    sealed: Option<SealedPick>,
    /// Where the pick waiting for its reveal is kept between runs (`--state-dir`).
    nonces: Option<NonceStore>,
    /// The round last asked for a pick, and the round last revealed.
    prompted: Option<u32>,
    revealed: Option<u32>,
}

impl Game<'_> {
    async fn run(&mut self) -> anyhow::Result<()> {
        let mut lines = stdin_lines();
        let mut stdin_open = true;
        // A resumed game may be waiting for this seat already (its reveal, say).
        self.act().await?;
        while !self.state.is_over() {
            tokio::select! {
                event = self.client.next_event() => {
                    let event = event.context("the connection closed")?;
                    self.on_event(&event).await?;
                }
                line = lines.recv(), if stdin_open => match line {
                    Some(line) => self.on_line(line.trim()).await?,
                    None => {
                        stdin_open = false;
                        println!("input closed: resigning");
                        self.refusal(self.client.resign(self.state.game_id()).await)?;
                    }
                },
            }
        }
        if let Some(store) = &self.nonces {
            store.remove(self.state.game_id())?;
        }
        if let Some(result) = self.state.result() {
            println!("{}", render::result_line(self.state.info(), &result));
        }
        self.await_rating().await
    }

    async fn on_event(&mut self, event: &ServerMsg) -> anyhow::Result<()> {
        apply_or_resync(self.client, &mut self.state, event).await?;
        let me = self.seat;
        match event {
            ServerMsg::Committed { seat, .. } if *seat != me => {
                println!("your opponent has picked");
            }
            ServerMsg::RoundResult { record, .. } => println!("{}", render::round_line(record)),
            ServerMsg::DrawOffered { by, .. } if *by != me => {
                println!("your opponent offers a draw: `draw` accepts, `decline` declines");
            }
            ServerMsg::DrawDeclined { by, .. } if *by != me => println!("draw declined"),
            ServerMsg::Presence {
                seat, connected, ..
            } if *seat != me => {
                let what = if *connected {
                    "is back"
                } else {
                    "disconnected"
                };
                println!("your opponent {what}");
            }
            _ => {}
        }
        self.act().await
    }

    /// Do what the state asks, whichever event (or snapshot) brought it there: ask for a
    /// pick once per round, and reveal the pick once the reveal phase opens.
    async fn act(&mut self) -> anyhow::Result<()> {
        let round = self.state.round();
        // seq 0: no round has started yet.
        if self.state.seq() == 0 || self.state.is_over() {
            return Ok(());
        }
        match self.state.phase() {
            Phase::Commit if self.prompted != Some(round) && !self.state.committed(self.seat) => {
                self.prompted = Some(round);
                print!("\n{}", render::game(&self.state));
                println!("round {round}: your pick (1-{})?", self.number());
            }
            Phase::Reveal if self.revealed != Some(round) && !self.state.revealed(self.seat) => {
                if let Some(sealed) = self.sealed.filter(|s| s.round == round) {
                    self.revealed = Some(round);
                    let game_id = self.state.game_id();
                    let sent = self
                        .client
                        .reveal(game_id, round, sealed.pick, sealed.nonce);
                    self.refusal(sent.await)?;
                    if let Some(store) = &self.nonces {
                        store.remove(game_id)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    async fn on_line(&mut self, line: &str) -> anyhow::Result<()> {
        let game_id = self.state.game_id();
        match line {
            "" => {}
            "help" | "?" => println!("{HELP}"),
            "board" => print!("{}", render::game(&self.state)),
            "resign" => self.refusal(self.client.resign(game_id).await)?,
            "abort" => self.refusal(self.client.abort(game_id).await)?,
            "draw" => self.refusal(self.client.offer_draw(game_id).await)?,
            "decline" => self.refusal(self.client.decline_draw(game_id).await)?,
            _ => match line.parse::<u16>() {
                Ok(pick) if self.state.info().variant.is_element(pick) => self.pick(pick).await?,
                _ => println!("{HELP}"),
            },
        }
        Ok(())
    }

    async fn pick(&mut self, pick: u16) -> anyhow::Result<()> {
        let round = self.state.round();
        let already = self.sealed.is_some_and(|s| s.round == round);
        if self.state.phase() != Phase::Commit || self.state.seq() == 0 || already {
            println!("no pick is due now");
            return Ok(());
        }
        let (sealed, commitment) = SealedPick::new(self.state.game_id(), round, self.seat, pick);
        if let Some(store) = &self.nonces {
            // On disk before the server can hear of the commitment.
            store.save(self.state.game_id(), &sealed)?;
        }
        self.sealed = Some(sealed);
        self.refusal(
            self.client
                .commit(self.state.game_id(), round, commitment)
                .await,
        )?;
        println!("picked {pick}; waiting for your opponent");
        Ok(())
    }

    fn number(&self) -> u16 {
        self.state.info().variant.number
    }

    /// Show a refusal and carry on; fail only when the connection is gone.
    fn refusal(&self, result: Result<(), ClientError>) -> anyhow::Result<()> {
        match result {
            Err(ClientError::Server { message, .. }) => {
                println!("refused: {message}");
                Ok(())
            }
            other => Ok(other?),
        }
    }

    async fn await_rating(&mut self) -> anyhow::Result<()> {
        // Only a rated game with a winner changes ratings.
        let rated = self.state.rated_result() == Some(true)
            && self.state.result().is_some_and(|r| r.winner.is_some());
        wait_for_rating(self.client, &mut self.state, Duration::from_secs(10)).await?;
        match self.state.ratings() {
            Some(r) => {
                let mine = r.get(self.seat);
                println!("your rating: {:.3} -> {:.3}", mine.before, mine.after);
            }
            None if rated => println!("the rating change has not been recorded yet"),
            None => {}
        }
        Ok(())
    }
}
