//! What crosses Redis between nodes: plain data, MessagePack (rmp-serde). A node's own
//! channel carries `NodeMsg`s addressed to its connections and games; a game's topic
//! channel carries its events (`TopicMsg`); the cluster's channel carries `ClusterMsg`s
//! every node hears.

use std::time::Duration;

use bytes::Bytes;
use elementals_protocol::messages::{GameId, LiveGame, Owed, Phase, RequestId, SeatPair};
use elementals_protocol::rules::{Element, Seat};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::bus::{ConnId, Notice, ReplyTo};
use crate::msg::{GameCmd, SeatAction};
use crate::msg::{Holding, LobbyCmd, NewGame};
use crate::record::AccountId;

/// To one node: for its connections (applied by its `LocalBus`) or its games.
#[derive(Debug, Serialize, Deserialize)]
pub enum NodeMsg {
    /// `Bus::send` (`kill_if_full`: `send_or_kill`).
    Send {
        conn: ConnId,
        frame: Bytes,
        kill_if_full: bool,
    },
    /// `Bus::send_framed`: the frames from `from` on, framed again there.
    SendFramed {
        conn: ConnId,
        frames: Vec<Bytes>,
        kill_if_full: bool,
    },
    Kill {
        conn: ConnId,
    },
    Close {
        conn: ConnId,
        code: u16,
        reason: String,
    },
    Answered {
        conn: ConnId,
        ok: bool,
        request: Option<RequestId>,
    },
    /// A command for a game this node runs.
    ToGame {
        game: GameId,
        cmd: WireCmd,
    },
    /// The game subscribed `conn` (of this node) to its topic: this node's local topic
    /// takes it, from the next event on.
    Subscribe {
        topic: GameId,
        conn: ConnId,
    },
    Unsubscribe {
        topic: GameId,
        conn: ConnId,
    },
    /// `my_games` on node `from`: what this node's game `game` waits for now (`asks.rs`).
    AskOwed {
        game: GameId,
        from: u16,
        ask: u64,
    },
    /// The answer to ask `ask`: the game's round, phase and outstanding actions; `None`
    /// if the game does not run here (any more).
    ToldOwed {
        ask: u64,
        owed: Option<WireOwed>,
    },
    /// `account`, seated in this node's game `game`, follows its moves on connection
    /// `conn` (of the sender): it is pushed `your_move` there, and, with `tell_owed`, what
    /// it owes now (`asks.rs`).
    Follow {
        game: GameId,
        account: AccountId,
        conn: ConnId,
        tell_owed: bool,
    },
    /// A request for the lobby, which runs on this node.
    ToLobby(LobbyCmd),
    /// What this node's connection `conn` has open in the lobby now (`Bus::hold`).
    Hold {
        conn: ConnId,
        holding: Option<Holding>,
    },
    /// A game the lobby starts, to run here (`Bus::start_game`).
    StartGame(NewGame),
}

/// A game's round, phase and outstanding actions (`OwedNow`), across nodes.
pub type WireOwed = (u32, Phase, Vec<Owed>);

/// On a game's topic channel, from the node that runs it.
#[derive(Debug, Serialize, Deserialize)]
pub enum TopicMsg {
    /// A batch of numbered events, each encoded once.
    Frames { frames: Vec<Bytes> },
    /// The game is over: the topic and its subscribers are forgotten.
    Closed,
}

/// On the cluster's channel, to every node.
#[derive(Debug, Serialize, Deserialize)]
pub enum ClusterMsg {
    /// A game opened (or moved) on `entry.node`.
    Opened { game: GameId, entry: DirEntry },
    /// A game ended on `node`.
    Ended { game: GameId, node: u16 },
    /// Summaries of `node`'s games that changed (at most one message a second a node).
    Summaries {
        node: u16,
        summaries: Vec<(GameId, LiveGame)>,
    },
    /// `node` is alive, with `online` users signed in (every `HEARTBEAT`), as of
    /// `sent_ms` (Unix milliseconds: the bus's lag, where the nodes share a clock); with
    /// `lobby`, the generation of the lobby it runs.
    Alive {
        node: u16,
        online: u32,
        sent_ms: u64,
        lobby: Option<i64>,
    },
    /// The lobby (its `generation`, its lease's token) has started on `node`: every node
    /// sends it again what its connections had open in the lobby before.
    Lobby { node: u16, generation: i64 },
    /// `node` is stopping.
    Gone { node: u16 },
    /// `account` signed in on `node` at `at_ms` (Unix milliseconds): its connections on
    /// other nodes that signed in earlier are superseded.
    SignedIn {
        account: AccountId,
        node: u16,
        at_ms: u64,
    },
    /// A game went to sleep (it runs on no node until a command or its deadline wakes it),
    /// listed as `summary` meanwhile.
    Slept {
        game: GameId,
        seats: SeatPair<AccountId>,
        node: u16,
        #[serde(default)]
        summary: Option<LiveGame>,
    },
}

/// A live game in the cluster's directory (the Redis hash, and each node's mirror).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DirEntry {
    pub node: u16,
    pub seats: SeatPair<AccountId>,
    pub summary: LiveGame,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct WireReply {
    conn: ConnId,
    request_id: Option<RequestId>,
    settle: bool,
}

impl From<ReplyTo> for WireReply {
    fn from(r: ReplyTo) -> Self {
        WireReply {
            conn: r.conn,
            request_id: r.request_id,
            settle: r.settle,
        }
    }
}

impl From<WireReply> for ReplyTo {
    fn from(r: WireReply) -> Self {
        ReplyTo {
            conn: r.conn,
            request_id: r.request_id,
            settle: r.settle,
        }
    }
}

/// `GameCmd` as plain data. A move's arrival instant travels as its age, in
/// microseconds, so the game's clock judges it at (about) the same instant.
#[derive(Debug, Serialize, Deserialize)]
pub enum WireCmd {
    Attach {
        seat: Seat,
        reply: WireReply,
        prelude: Option<Bytes>,
    },
    Detach {
        seat: Seat,
        conn: ConnId,
    },
    Act {
        seat: Seat,
        action: WireAction,
        reply: WireReply,
        age_us: u64,
    },
    Watch {
        reply: WireReply,
    },
    Unwatch {
        conn: ConnId,
    },
}

#[derive(Debug, Serialize, Deserialize)]
pub enum WireAction {
    /// `pick` and `nonce`: a reveal escrowed with the commit (both or neither).
    Commit {
        round: u32,
        commitment: Bytes,
        #[serde(default)]
        pick: Option<Element>,
        #[serde(default)]
        nonce: Option<Bytes>,
    },
    Reveal {
        round: u32,
        pick: Element,
        nonce: Bytes,
    },
    Resign,
    OfferDraw,
    DeclineDraw,
    ClaimWin,
    Abort,
}

impl WireCmd {
    /// `cmd` as plain data; the test-only commands, which carry a channel, are given back.
    pub fn of(cmd: GameCmd) -> Result<WireCmd, GameCmd> {
        Ok(match cmd {
            GameCmd::Attach {
                seat,
                reply,
                prelude,
            } => WireCmd::Attach {
                seat,
                reply: reply.into(),
                prelude,
            },
            GameCmd::Detach { seat, conn_id } => WireCmd::Detach {
                seat,
                conn: conn_id,
            },
            GameCmd::Act {
                seat,
                action,
                reply,
                arrived,
            } => WireCmd::Act {
                seat,
                action: WireAction::of(action),
                reply: reply.into(),
                age_us: u64::try_from(arrived.elapsed().as_micros()).unwrap_or(u64::MAX),
            },
            GameCmd::Watch { reply } => WireCmd::Watch {
                reply: reply.into(),
            },
            GameCmd::Unwatch { conn_id } => WireCmd::Unwatch { conn: conn_id },
            #[allow(unreachable_patterns)] // Only with the test hooks.
            other => return Err(other),
        })
    }

    /// The command again, on the node that runs the game.
    pub fn into_cmd(self) -> GameCmd {
        match self {
            WireCmd::Attach {
                seat,
                reply,
                prelude,
            } => GameCmd::Attach {
                seat,
                reply: reply.into(),
                prelude,
            },
            WireCmd::Detach { seat, conn } => GameCmd::Detach {
                seat,
                conn_id: conn,
            },
            WireCmd::Act {
                seat,
                action,
                reply,
                age_us,
            } => {
                let now = Instant::now();
                GameCmd::Act {
                    seat,
                    action: action.into_action(),
                    reply: reply.into(),
                    arrived: now
                        .checked_sub(Duration::from_micros(age_us))
                        .unwrap_or(now),
                }
            }
            WireCmd::Watch { reply } => GameCmd::Watch {
                reply: reply.into(),
            },
            WireCmd::Unwatch { conn } => GameCmd::Unwatch { conn_id: conn },
        }
    }
}

impl WireAction {
    fn of(action: SeatAction) -> WireAction {
        match action {
            SeatAction::Commit {
                round,
                commitment,
                pick,
                nonce,
            } => WireAction::Commit {
                round,
                commitment: commitment.into(),
                pick,
                nonce: nonce.map(Into::into),
            },
            SeatAction::Reveal { round, pick, nonce } => WireAction::Reveal {
                round,
                pick,
                nonce: nonce.into(),
            },
            SeatAction::Resign => WireAction::Resign,
            SeatAction::Abort => WireAction::Abort,
            SeatAction::OfferDraw => WireAction::OfferDraw,
            SeatAction::DeclineDraw => WireAction::DeclineDraw,
            SeatAction::ClaimWin => WireAction::ClaimWin,
        }
    }

    fn into_action(self) -> SeatAction {
        match self {
            WireAction::Commit {
                round,
                commitment,
                pick,
                nonce,
            } => SeatAction::Commit {
                round,
                commitment: commitment.to_vec(),
                pick,
                nonce: nonce.map(|n| n.to_vec()),
            },
            WireAction::Reveal { round, pick, nonce } => SeatAction::Reveal {
                round,
                pick,
                nonce: nonce.to_vec(),
            },
            WireAction::Resign => SeatAction::Resign,
            WireAction::Abort => SeatAction::Abort,
            WireAction::OfferDraw => SeatAction::OfferDraw,
            WireAction::DeclineDraw => SeatAction::DeclineDraw,
            WireAction::ClaimWin => SeatAction::ClaimWin,
        }
    }
}

/// A notice as a `NodeMsg` for connection `conn`.
pub fn notice(conn: ConnId, notice: Notice) -> NodeMsg {
    match notice {
        Notice::Answered { ok, request } => NodeMsg::Answered { conn, ok, request },
    }
}

/// Encodes a message for Redis.
pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    // Plain enums of plain data: encoding cannot fail.
    rmp_serde::to_vec(msg).expect("a bus message encodes")
}

/// Decodes a message from Redis (`None`: not one of ours; logged and dropped).
pub fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Option<T> {
    match rmp_serde::from_slice(bytes) {
        Ok(msg) => Some(msg),
        Err(error) => {
            tracing::warn!(%error, "a message on the cluster's bus could not be decoded");
            None
        }
    }
}
