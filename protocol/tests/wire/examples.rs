//! One example of every message, and the `type` each is sent as.

use elementals_protocol::messages::{
    Account, Challenge, Clocks, EndReason, GameId, GameInfo, GameResult, GameSnapshot, Limits,
    LiveGame, MyGame, Owed, OwedAction, Phase, PlayerInfo, PoolCount, RoundRecord, SeatPair, Seek,
};
use elementals_protocol::rating::RatingChange;
use elementals_protocol::rules::Move;
use elementals_protocol::wire::MAX_CLIENT_MESSAGE_BYTES;
use elementals_protocol::{
    ClientMsg, ErrorCode, Outcome, Seat, ServerMsg, TimeControl, Variant, PROTOCOL_VERSION,
};

mod server;
pub(crate) use server::server_examples;

pub(crate) fn game_id() -> GameId {
    "6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab".parse().unwrap()
}

fn player(name: &str, rating: f64, guest: bool) -> PlayerInfo {
    PlayerInfo {
        name: name.into(),
        rating,
        guest,
        bot: false,
    }
}

fn clocks() -> Clocks {
    Clocks {
        one_ms: 171_000,
        two_ms: 168_500,
        running: SeatPair::new(true, false),
    }
}

fn game_info() -> GameInfo {
    GameInfo {
        game_id: game_id(),
        variant: Variant::CLASSIC,
        time_control: TimeControl::BLITZ,
        rated: true,
        players: SeatPair::new(player("alice", 1.3, false), player("bob", 1.25, false)),
        started_at: 1_767_225_600_000,
    }
}

fn round_record() -> RoundRecord {
    RoundRecord {
        round: 1,
        picks: SeatPair::new(5, 2),
        outcome: Outcome {
            winner: Some(Seat::Two),
            moved: Some(Move {
                element: 2,
                by: Seat::Two,
                from: 0,
                to: -1,
            }),
        },
        positions: vec![0, -1, 0, 0, 0],
    }
}

pub(crate) fn snapshot() -> GameSnapshot {
    GameSnapshot {
        game: game_info(),
        seq: 9,
        round: 2,
        phase: Phase::Reveal,
        committed: SeatPair::new(true, true),
        revealed: SeatPair::new(true, false),
        positions: vec![0, -1, 0, 0, 0],
        clocks: clocks(),
        rounds: vec![round_record()],
        connected: SeatPair::new(true, false),
        spectators: 3,
        draw_offer: Some(Seat::One),
        result: None,
    }
}

fn seek() -> Seek {
    Seek {
        seek_id: 17,
        by: player("carol", 2.0, false),
        variant: Variant::new(7, 2, 5).unwrap(),
        time_control: TimeControl::RAPID,
        rated: true,
    }
}

fn challenge() -> Challenge {
    Challenge {
        challenge_id: 23,
        from: player("guest-0042", 1.0, true),
        to: "dave".into(),
        variant: Variant::CLASSIC,
        time_control: TimeControl::LIVE,
        rated: false,
    }
}

/// The snake_case `type` of a client message. Exhaustive on purpose: a new variant does
/// not compile until it is named here, and then `client_examples` must cover it.
pub(crate) fn client_type(msg: &ClientMsg) -> &'static str {
    use ClientMsg::*;
    match msg {
        Hello { .. } => "hello",
        Ping { .. } => "ping",
        Register { .. } => "register",
        Login { .. } => "login",
        Guest { .. } => "guest",
        Resume { .. } => "resume",
        Logout { .. } => "logout",
        JoinPool { .. } => "join_pool",
        LeavePool { .. } => "leave_pool",
        CreateSeek { .. } => "create_seek",
        CancelSeek { .. } => "cancel_seek",
        ListSeeks { .. } => "list_seeks",
        AcceptSeek { .. } => "accept_seek",
        Challenge { .. } => "challenge",
        AcceptChallenge { .. } => "accept_challenge",
        DeclineChallenge { .. } => "decline_challenge",
        CancelChallenge { .. } => "cancel_challenge",
        PlayBot { .. } => "play_bot",
        LobbyCounts { .. } => "lobby_counts",
        OfferRematch { .. } => "offer_rematch",
        DeclineRematch { .. } => "decline_rematch",
        Commit { .. } => "commit",
        Reveal { .. } => "reveal",
        Resign { .. } => "resign",
        Abort { .. } => "abort",
        OfferDraw { .. } => "offer_draw",
        DeclineDraw { .. } => "decline_draw",
        ClaimWin { .. } => "claim_win",
        Sync { .. } => "sync",
        MyGames { .. } => "my_games",
        ListGames { .. } => "list_games",
        Watch { .. } => "watch",
        Unwatch { .. } => "unwatch",
    }
}

/// The snake_case `type` of a server message; exhaustive like [`client_type`].
pub(crate) fn server_type(msg: &ServerMsg) -> &'static str {
    use ServerMsg::*;
    match msg {
        Welcome { .. } => "welcome",
        Pong { .. } => "pong",
        Ok { .. } => "ok",
        Error { .. } => "error",
        Authenticated { .. } => "authenticated",
        Queued { .. } => "queued",
        SeekCreated { .. } => "seek_created",
        Seeks { .. } => "seeks",
        ChallengeSent { .. } => "challenge_sent",
        LiveGames { .. } => "live_games",
        OpenGames { .. } => "open_games",
        Counts { .. } => "counts",
        Snapshot { .. } => "snapshot",
        QueueStatus { .. } => "queue_status",
        ChallengeReceived { .. } => "challenge_received",
        ChallengeDeclined { .. } => "challenge_declined",
        ChallengeCancelled { .. } => "challenge_cancelled",
        SeekRemoved { .. } => "seek_removed",
        RematchOffered { .. } => "rematch_offered",
        RematchDeclined { .. } => "rematch_declined",
        GameStart { .. } => "game_start",
        Spectators { .. } => "spectators",
        YourMove { .. } => "your_move",
        RoundStart { .. } => "round_start",
        Committed { .. } => "committed",
        RevealPhase { .. } => "reveal_phase",
        Revealed { .. } => "revealed",
        RoundResult { .. } => "round_result",
        DrawOffered { .. } => "draw_offered",
        DrawDeclined { .. } => "draw_declined",
        Presence { .. } => "presence",
        GameOver { .. } => "game_over",
        RatingUpdate { .. } => "rating_update",
        Notice { .. } => "notice",
    }
}

pub(crate) fn client_examples() -> Vec<ClientMsg> {
    use ClientMsg::*;
    let g = game_id();
    vec![
        Hello {
            id: 1,
            protocol_version: PROTOCOL_VERSION,
            client: Some("example/1.0".into()),
            batch: false,
        },
        Ping { id: 2 },
        Register {
            id: 3,
            name: "alice".into(),
            password: "correct horse".into(),
        },
        Login {
            id: 4,
            name: "Alice".into(),
            password: "correct horse".into(),
        },
        Guest { id: 5 },
        Resume {
            id: 6,
            token: "ab".repeat(32),
        },
        Logout { id: 7 },
        JoinPool {
            id: 8,
            variant: Variant::CLASSIC,
            time_control: "blitz".into(),
            rated: true,
        },
        LeavePool { id: 9 },
        CreateSeek {
            id: 10,
            variant: Variant::new(7, 3, 4).unwrap(),
            time_control: TimeControl {
                initial_ms: 300_000,
                increment_ms: 3_000,
                reveal_ms: 20_000,
                per_phase_ms: None,
            },
            rated: false,
        },
        CancelSeek {
            id: 11,
            seek_id: 17,
        },
        ListSeeks { id: 12 },
        AcceptSeek {
            id: 13,
            seek_id: u64::MAX,
        },
        Challenge {
            id: 14,
            opponent: "bob".into(),
            variant: Variant::CLASSIC,
            time_control: TimeControl::LIVE,
            rated: true,
        },
        AcceptChallenge {
            id: 15,
            challenge_id: 23,
        },
        DeclineChallenge {
            id: 16,
            challenge_id: 23,
        },
        CancelChallenge {
            id: 17,
            challenge_id: 23,
        },
        OfferRematch { id: 18, game_id: g },
        Commit {
            id: 19,
            game_id: g,
            round: 1,
            commitment: vec![0x89; 32],
            pick: None,
            nonce: None,
        },
        Commit {
            id: 19,
            game_id: g,
            round: 2,
            commitment: vec![0x89; 32],
            pick: Some(3),
            nonce: Some((0..32).collect()),
        },
        Reveal {
            id: 20,
            game_id: g,
            round: 1,
            pick: 5,
            nonce: (0..32).collect(),
        },
        Resign { id: 21, game_id: g },
        OfferDraw { id: 22, game_id: g },
        DeclineDraw { id: 23, game_id: g },
        ClaimWin { id: 24, game_id: g },
        Sync { id: 25, game_id: g },
        ListGames { id: 26 },
        Watch { id: 27, game_id: g },
        Unwatch {
            id: u32::MAX,
            game_id: g,
        },
        PlayBot {
            id: 28,
            strength: "medium".into(),
            variant: Variant::CLASSIC,
            time_control: "blitz".into(),
        },
        LobbyCounts { id: 29 },
        MyGames { id: 30 },
        Abort { id: 31, game_id: g },
        DeclineRematch { id: 32, game_id: g },
    ]
}
