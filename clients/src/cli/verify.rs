//! `verify FILE|URL`: checks a finished game's signed transcript offline (a URL is fetched
//! first, then checked like a file), and fails with the check that failed.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use elementals_client::http::Http;
use elementals_client::transcript::{self, Verified};
use elementals_client::ServerUrl;
use elementals_protocol::messages::EndReason;

use super::ServerArg;

#[derive(Args, Debug, Clone)]
pub struct VerifyArgs {
    /// A file holding a transcript (what `GET /api/games/{id}/transcript` answers), or that
    /// URL (`http://` or `https://`).
    pub source: String,
    /// Require this public key (standard base64, as `GET /api/transcript-key` gives it, or
    /// 64 hex characters). Without it any key is accepted and its id is printed, to compare
    /// with the server's.
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// Also trust this CA certificate (PEM or DER) for an `https://` URL.
    #[arg(long, env = "ELEMENTALS_CA_CERT", value_name = "PATH")]
    pub ca_cert: Option<PathBuf>,
}

pub async fn run(args: VerifyArgs) -> anyhow::Result<()> {
    let key = args
        .key
        .as_deref()
        .map(transcript::parse_public_key)
        .transpose()
        .context("--key")?;
    let bytes = read(&args).await?;
    let verified = transcript::verify(&bytes, key.as_ref())
        .with_context(|| format!("transcript refused ({})", args.source))?;
    print!("{}", summary(&verified, key.is_some()));
    Ok(())
}

/// The transcript's bytes, from the file or the URL.
async fn read(args: &VerifyArgs) -> anyhow::Result<Vec<u8>> {
    let source = &args.source;
    if !(source.starts_with("http://") || source.starts_with("https://")) {
        return std::fs::read(source).with_context(|| format!("reading {source}"));
    }
    let server = ServerUrl::parse(source)?;
    let after_scheme = source.split_once("://").map_or("", |(_, rest)| rest);
    let path = after_scheme.find('/').map_or("/", |at| &after_scheme[at..]);
    let roots = ServerArg {
        server: server.clone(),
        ca_cert: args.ca_cert.clone(),
    }
    .tls_roots()?;
    let response = Http::new(&server, &roots)?
        .get(path)
        .await
        .with_context(|| format!("fetching {source}"))?;
    anyhow::ensure!(
        response.status == 200,
        "fetching {source}: answered {}",
        response.status
    );
    Ok(response.body)
}

/// What passed, in a few lines.
fn summary(verified: &Verified, pinned: bool) -> String {
    let game = &verified.transcript.game;
    let players = &game.players;
    let result = match game.result.winner {
        Some(winner) => format!(
            "{} won ({})",
            players.get(winner).name,
            reason(game.result.reason)
        ),
        None => format!("no winner ({})", reason(game.result.reason)),
    };
    let mut out = format!(
        "verified: game {} ({} vs {}), {} rounds, {result}\n",
        game.game_id,
        players.one.name,
        players.two.name,
        game.rounds.len()
    );
    if let Some(ratings) = &verified.transcript.ratings {
        for (player, change) in [(&players.one, ratings.one), (&players.two, ratings.two)] {
            out.push_str(&format!(
                "  {}: {:.3} -> {:.3}\n",
                player.name, change.before, change.after
            ));
        }
    }
    let key = if pinned {
        "the key required"
    } else {
        "compare it with the server's GET /api/transcript-key, or require it with --key"
    };
    out.push_str(&format!("signed by key {} ({key})\n", verified.key_id));
    out
}

fn reason(reason: EndReason) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{reason:?}"))
}
