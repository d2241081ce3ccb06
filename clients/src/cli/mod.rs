//! The subcommands, and the options they share.

pub mod bot;
pub mod play;
pub mod verify;
pub mod watch;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use elementals_client::http::{self, Http};
use elementals_client::{
    Client, ConnectOptions, GameState, NonceStore, ServerUrl, Session, TlsRoots,
};
use elementals_protocol::messages::GameId;
use elementals_protocol::{ServerMsg, Variant};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

/// Where the server is.
#[derive(Args, Debug, Clone)]
pub struct ServerArg {
    /// Server address: `ws://HOST:PORT/ws`, `http://HOST:PORT`, `wss://` or `https://` (TLS),
    /// or `HOST:PORT`.
    #[arg(
        long,
        env = "ELEMENTALS_SERVER",
        default_value = "ws://127.0.0.1:7878/ws"
    )]
    pub server: ServerUrl,
    /// Also trust this CA certificate (PEM or DER) for `wss://` and `https://`, besides
    /// webpki's roots: a private CA, or a self-signed proxy in front of a test deployment.
    #[arg(long, env = "ELEMENTALS_CA_CERT", value_name = "PATH")]
    pub ca_cert: Option<PathBuf>,
}

impl ServerArg {
    /// What TLS trusts: webpki's roots and the certificates of `--ca-cert`.
    pub fn tls_roots(&self) -> anyhow::Result<TlsRoots> {
        let Some(path) = &self.ca_cert else {
            return Ok(TlsRoots::default());
        };
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        ca_certs(&bytes).with_context(|| format!("reading a certificate from {}", path.display()))
    }

    /// Connect to the server's WebSocket and say `hello`.
    pub async fn connect(&self) -> anyhow::Result<Client> {
        let url = self.server.ws_url();
        let options = ConnectOptions {
            tls_roots: self.tls_roots()?,
            ..ConnectOptions::default()
        };
        Client::connect_with(&url, options)
            .await
            .with_context(|| format!("connecting to {url}"))
    }
}

/// Webpki's roots and the certificates in `bytes`: every `CERTIFICATE` block of a PEM
/// file, or else one DER certificate.
fn ca_certs(bytes: &[u8]) -> anyhow::Result<TlsRoots> {
    if !bytes.windows(10).any(|w| w == b"-----BEGIN") {
        return Ok(TlsRoots::default().with_der(bytes));
    }
    let certs = CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<Vec<_>, _>>()
        .context("invalid PEM")?;
    anyhow::ensure!(!certs.is_empty(), "no CERTIFICATE block in the PEM file");
    Ok(certs.into_iter().fold(TlsRoots::default(), |roots, cert| {
        roots.with_der(cert.to_vec())
    }))
}

/// Where unrevealed picks are kept between runs.
#[derive(Args, Debug, Clone)]
pub struct StateArg {
    /// Keep each unrevealed pick and nonce in a file under DIR (per account and game,
    /// written before the commit is sent), so that a run stopped between its commit and
    /// its reveal reveals when started again, in each of its games. Signed in seated in
    /// games, a run plays them on. At sign-in, files of games that have ended, and any
    /// older than 56 days, are removed.
    #[arg(long, env = "ELEMENTALS_STATE_DIR", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl StateArg {
    /// `account`'s store under the directory, if one was given, signed in `seated` in
    /// these games: what is kept for other games, which have ended, goes
    /// (`NonceStore::prune`).
    pub fn store(&self, account: &str, seated: &[GameId]) -> anyhow::Result<Option<NonceStore>> {
        let Some(dir) = &self.state_dir else {
            return Ok(None);
        };
        let store = NonceStore::open(dir, account)
            .with_context(|| format!("opening the state directory {}", dir.display()))?;
        store
            .prune(seated, NonceStore::MAX_AGE)
            .with_context(|| format!("pruning {}", store.dir().display()))?;
        Ok(Some(store))
    }
}

/// Each game `session` sits in, as a state to play on from: the snapshot that follows
/// `authenticated` for the game it names, and `sync`'s for the others (PROTOCOL.md
/// section 3).
pub async fn seated_games(client: &Client, session: &Session) -> anyhow::Result<Vec<GameState>> {
    let mut states = Vec::new();
    if let Some(game_id) = session.game_id {
        states.push(seated_snapshot(client, game_id).await?);
    }
    for game_id in session.seated() {
        if Some(game_id) == session.game_id {
            continue;
        }
        match client.sync(game_id).await {
            Ok((snapshot, seat)) => states.push(GameState::from_snapshot(snapshot, seat)),
            // Ended since the sign-in: nothing to play on.
            Err(err) if err.code().is_some() => {
                tracing::info!(%game_id, %err, "a seated game is not on any more");
            }
            Err(err) => return Err(err).context("syncing a seated game"),
        }
    }
    Ok(states)
}

/// The snapshot that follows `authenticated` for a seated account (PROTOCOL.md section 3).
pub async fn seated_snapshot(client: &Client, game_id: GameId) -> anyhow::Result<GameState> {
    loop {
        let event = client.next_event().await.context("the connection closed")?;
        if let ServerMsg::Snapshot { snapshot, seat, .. } = event {
            if snapshot.game.game_id == game_id {
                return Ok(GameState::from_snapshot(snapshot, seat));
            }
        }
    }
}

/// Name and password of the account to use.
#[derive(Args, Debug, Clone)]
pub struct AccountArgs {
    /// Account name; registered on first use.
    #[arg(long, env = "ELEMENTALS_NAME")]
    pub name: String,
    /// Account password (8-128 bytes).
    #[arg(long, env = "ELEMENTALS_PASSWORD", hide_env_values = true)]
    pub password: String,
}

impl AccountArgs {
    /// Connects to `server` and signs in (registering the name on first use).
    pub async fn sign_in(&self, server: &ServerArg) -> anyhow::Result<(Client, Session)> {
        let client = server.connect().await?;
        let session = client
            .register_or_login(&self.name, &self.password)
            .await
            .context("signing in")?;
        Ok((client, session))
    }
}

/// What kind of game to seek.
#[derive(Args, Debug, Clone)]
pub struct GameArgs {
    /// Number, range and distance, e.g. `5,2,3`.
    #[arg(long, default_value = "5,2,3", value_parser = parse_variant)]
    pub variant: Variant,
    /// Time-control preset of the pool.
    #[arg(long, value_enum, default_value_t = Preset::Blitz)]
    pub time_control: Preset,
}

/// The pool's time-control presets.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    Blitz,
    Rapid,
    Live,
    /// Correspondence: a day for each commit and each reveal.
    #[value(name = "corr-1d")]
    Corr1d,
    #[value(name = "corr-3d")]
    Corr3d,
    #[value(name = "corr-7d")]
    Corr7d,
}

impl Preset {
    /// The preset's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Blitz => "blitz",
            Preset::Rapid => "rapid",
            Preset::Live => "live",
            Preset::Corr1d => "corr-1d",
            Preset::Corr3d => "corr-3d",
            Preset::Corr7d => "corr-7d",
        }
    }
}

/// `N,R,D` as a checked variant.
pub fn parse_variant(text: &str) -> Result<Variant, String> {
    let numbers: Vec<u16> = text
        .split(',')
        .map(|n| n.trim().parse::<u16>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("expected three numbers like 5,2,3: {e}"))?;
    let [number, range, distance] = numbers[..] else {
        return Err("expected three numbers: number,range,distance".into());
    };
    Variant::new(number, range, distance).map_err(|e| e.to_string())
}

/// `leaderboard`: fetch and print the table.
pub async fn leaderboard(args: ServerArg) -> anyhow::Result<()> {
    let entries = Http::new(&args.server, &args.tls_roots()?)?
        .leaderboard()
        .await
        .with_context(|| format!("reading the leaderboard from {}", args.server.http_base()))?;
    print!("{}", http::leaderboard_table(&entries));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_parse_and_are_checked() {
        assert_eq!(parse_variant("5,2,3"), Ok(Variant::CLASSIC));
        assert_eq!(
            parse_variant(" 7, 2 ,5"),
            Ok(Variant::new(7, 2, 5).unwrap())
        );
        for bad in ["5,2", "5,2,3,4", "a,b,c", "5,3,3", "2,1,1", ""] {
            assert!(parse_variant(bad).is_err(), "{bad:?}");
        }
    }
}
