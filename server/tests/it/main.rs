//! The server's integration tests, one binary: `cargo test -p elementals-server --test it`
//! runs them all, `--test it cluster_lobby::` one file's. Each test drives the real server
//! (in process on 127.0.0.1:0, or its binary as child processes) over real sockets.
//!
//! The support modules are declared here once; every other module is one concept's tests.
//! No test here changes process-wide state that another reads (environment variables,
//! the tracing subscriber): libtest runs them side by side in this one process.

// Support: the in-process server and the typed client (`common`), the server binary as a
// process for the crash tests (`recovery_support`), a cluster of such processes
// (`cluster_support`), and a cuttable proxy in front of PostgreSQL (`pg_proxy`).
mod cluster_support;
mod common;
mod pg_proxy;
mod recovery_support;

// Games, their rules and their clients.
mod bounded_games;
mod computer;
mod correspondence;
mod escrow;
mod games;
mod many_games;
mod my_games;
mod spectators;

// Accounts, sessions, history and the HTTP API.
mod history;
mod http_api;
mod sessions;

// Abuse and hostile clients.
mod abuse_accounts;
mod abuse_limits;
mod abuse_timeouts;
mod hostile_frames;
mod hostile_panic;
mod hostile_play;

// Storage: hibernation, crashes, a full disk, PostgreSQL out of reach.
mod disk_faults;
mod hibernation;
mod pg_outage;
mod recovery;
mod recovery_end;

// Cluster mode: real server processes on one PostgreSQL database and Redis.
mod cluster;
mod cluster_hibernation;
mod cluster_lobby;
mod cluster_lobby_challenges;
mod cluster_lobby_cutoff;
mod cluster_lobby_failover;
mod cluster_lobby_races;
mod cluster_pg;
mod cluster_players;
mod cluster_rejoin;
mod failover;
mod nginx;

// The fuzz harness's committed inputs, and the browser client's own suites.
mod browser;
mod fuzz_replay;
