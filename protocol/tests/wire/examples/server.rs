//! One example of every server message.

use super::*;

pub(crate) fn server_examples() -> Vec<ServerMsg> {
    use ServerMsg::*;
    let g = game_id();
    vec![
        Welcome {
            id: 1,
            protocol_version: PROTOCOL_VERSION,
            server: "elementals/0.1.0".into(),
            limits: Limits {
                max_message_bytes: MAX_CLIENT_MESSAGE_BYTES as u32,
                max_messages_per_s: 20,
                heartbeat_ms: 20_000,
                idle_timeout_ms: 60_000,
                max_rounds: 1_000,
                first_commit_ms: 30_000,
            },
        },
        Pong { id: 2 },
        Ok { id: 3 },
        ServerMsg::error(
            Some(4),
            ErrorCode::NameTaken,
            "an account named alice exists",
        ),
        ServerMsg::error(None, ErrorCode::BadMessage, "truncated MessagePack"),
        Authenticated {
            id: 5,
            account: Account {
                name: "alice".into(),
                rating: 1.3,
                guest: false,
                wins: 3,
                losses: 2,
                draws: 1,
            },
            token: "0f".repeat(32),
            token_expires_at: 1_769_817_600_000,
            game_id: Some(game_id()),
            games: vec![game_id()],
        },
        Queued {
            id: 6,
            variant: Variant::CLASSIC,
            time_control: TimeControl::BLITZ,
            rated: true,
        },
        SeekCreated {
            id: 7,
            seek: seek(),
        },
        Seeks {
            id: 8,
            seeks: vec![seek(), seek()],
        },
        ChallengeSent {
            id: 9,
            challenge: challenge(),
        },
        LiveGames {
            id: 10,
            games: vec![LiveGame {
                game_id: g,
                variant: Variant::CLASSIC,
                time_control: TimeControl::BLITZ,
                rated: true,
                players: game_info().players,
                round: 2,
                positions: vec![0, -1, 0, 0, 0],
                spectators: 3,
                correspondence: false,
            }],
        },
        Snapshot {
            id: Some(11),
            snapshot: snapshot(),
            seat: None,
        },
        Snapshot {
            id: None,
            snapshot: GameSnapshot {
                phase: Phase::Over,
                result: Some(GameResult {
                    winner: None,
                    reason: EndReason::DrawAgreed,
                }),
                draw_offer: None,
                ..snapshot()
            },
            seat: Some(Seat::Two),
        },
        QueueStatus {
            players_waiting: 12,
            rating_window: 0.35,
            waited_ms: 2_000,
        },
        ChallengeReceived {
            challenge: challenge(),
        },
        ChallengeDeclined { challenge_id: 23 },
        ChallengeCancelled { challenge_id: 23 },
        SeekRemoved { seek_id: 17 },
        RematchOffered {
            game_id: g,
            by: Seat::One,
        },
        RematchDeclined {
            game_id: g,
            by: Seat::Two,
        },
        GameStart {
            game: game_info(),
            seat: Seat::One,
        },
        Spectators {
            game_id: g,
            count: 4,
        },
        YourMove {
            game_id: g,
            seat: Seat::Two,
            round: 3,
            action: OwedAction::Reveal,
            deadline: Some(1_767_225_612_000),
        },
        RoundStart {
            game_id: g,
            seq: 1,
            round: 1,
            clocks: clocks(),
        },
        Committed {
            game_id: g,
            seq: 2,
            round: 1,
            seat: Seat::Two,
            clocks: clocks(),
        },
        RevealPhase {
            game_id: g,
            seq: 4,
            round: 1,
            reveal_ms: 15_000,
            clocks: clocks(),
        },
        Revealed {
            game_id: g,
            seq: 5,
            round: 1,
            seat: Seat::One,
            clocks: clocks(),
        },
        RoundResult {
            game_id: g,
            seq: 7,
            record: round_record(),
            clocks: clocks(),
        },
        RoundResult {
            game_id: g,
            seq: 14,
            record: RoundRecord {
                round: 2,
                picks: SeatPair::new(3, 3),
                outcome: Outcome {
                    winner: None,
                    moved: None,
                },
                positions: vec![0, -1, 0, 0, 0],
            },
            clocks: clocks(),
        },
        DrawOffered {
            game_id: g,
            seq: 15,
            by: Seat::One,
        },
        DrawDeclined {
            game_id: g,
            seq: 16,
            by: Seat::Two,
        },
        Presence {
            game_id: g,
            seq: 17,
            seat: Seat::Two,
            connected: false,
            grace_ms: 30_000,
        },
        GameOver {
            game_id: g,
            seq: 18,
            result: GameResult {
                winner: Some(Seat::One),
                reason: EndReason::Abandoned,
            },
            rated: true,
            clocks: clocks(),
        },
        RatingUpdate {
            game_id: g,
            seq: 19,
            ratings: SeatPair::new(
                RatingChange {
                    before: 1.3,
                    after: 1.8,
                },
                RatingChange {
                    before: 1.25,
                    after: 1.0,
                },
            ),
        },
        OpenGames {
            id: 31,
            games: vec![MyGame {
                game_id: g,
                seat: Seat::Two,
                opponent: game_info().players.one,
                variant: Variant::CLASSIC,
                time_control: TimeControl::BLITZ,
                rated: true,
                round: 3,
                phase: Phase::Reveal,
                owed: vec![
                    Owed {
                        seat: Seat::One,
                        action: OwedAction::Reveal,
                        deadline: Some(1_764_600_000_000),
                    },
                    Owed {
                        seat: Seat::Two,
                        action: OwedAction::Reveal,
                        deadline: None,
                    },
                ],
            }],
        },
        Counts {
            id: 12,
            online: 42,
            pools: vec![PoolCount {
                variant: Variant::CLASSIC,
                time_control: "blitz".into(),
                rated: true,
                waiting: 3,
            }],
        },
        GameStart {
            game: GameInfo {
                players: SeatPair::new(
                    player("alice", 1.3, false),
                    PlayerInfo {
                        bot: true,
                        ..player("bot-medium", 1.0, false)
                    },
                ),
                rated: false,
                ..game_info()
            },
            seat: Seat::One,
        },
        Notice {
            code: "superseded".into(),
            message: "signed in from another connection".into(),
        },
    ]
}
