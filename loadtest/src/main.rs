//! `elementals-loadtest`: parse options and run; or, re-executed by a run, be its game
//! server (`serve`) or its echo server (`echo-serve`) in a process of their own.

mod broadcast;
mod cluster;
mod conn;
mod cpu;
mod ctx;
mod dump;
mod echo;
mod failover;
mod flood;
mod generators;
mod lean;
mod limits;
mod local;
mod medians;
mod options;
mod player;
mod report;
mod run;
mod sampler;
mod slice;
mod spectator;
mod stats;
mod status;

use anyhow::Context;
use clap::Parser;
use tracing_subscriber::EnvFilter;

use crate::options::{Cli, Command};

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Runtime::new()?;
    match cli.command {
        Some(Command::Serve { args }) => {
            limits::raise()?;
            runtime.block_on(local::serve(args))
        }
        Some(Command::EchoServe) => {
            limits::raise()?;
            runtime.block_on(echo::serve())
        }
        Some(Command::BroadcastServe) => {
            limits::raise()?;
            runtime.block_on(broadcast::serve())
        }
        Some(Command::Medians { files }) => medians::run(&files),
        Some(Command::Flood(options)) => {
            let json = options.json.clone();
            let report = runtime.block_on(flood::run(options))?;
            print!("{}", report.table());
            if let Some(path) = json {
                let text = serde_json::to_string_pretty(&report)?;
                std::fs::write(&path, text + "\n")
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            Ok(())
        }
        None if cli.run.generator.is_some() => {
            let result = runtime.block_on(generators::child(cli.run));
            // Not waiting for the read of stdin that watches for the parent's end.
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            result
        }
        None => {
            let json = cli.run.json.clone();
            let report = runtime.block_on(run::run(cli.run))?;
            print!("{}", report.table());
            if let Some(path) = json {
                let text = serde_json::to_string_pretty(&report)?;
                std::fs::write(&path, text + "\n")
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            // Clients still closing are of no interest now.
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            Ok(())
        }
    }
}
