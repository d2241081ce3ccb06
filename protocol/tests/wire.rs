//! The wire format as a contract: every message round-trips, every frame is a map with
//! string keys and a snake_case `type`, malformed input is refused with the right code and
//! never panics, and PROTOCOL.md documents every message, field and error code.

use std::collections::BTreeSet;

use elementals_protocol::messages::{
    Account, Challenge, Clocks, EndReason, GameId, GameInfo, GameResult, GameSnapshot, Limits,
    LiveGame, Phase, PlayerInfo, RoundRecord, SeatPair, Seek,
};
use elementals_protocol::rating::RatingChange;
use elementals_protocol::rules::{Move, MAX_DISTANCE, MAX_NUMBER, MAX_ROUNDS};
use elementals_protocol::time_control::{
    MAX_INCREMENT_MS, MAX_INITIAL_MS, MAX_REVEAL_MS, MIN_INITIAL_MS, MIN_REVEAL_MS,
};
use elementals_protocol::wire::{
    self, check_structure, decode_client, decode_server, DecodeError, MAX_CLIENT_MESSAGE_BYTES,
    MAX_DEPTH, MAX_SERVER_MESSAGE_BYTES,
};
use elementals_protocol::{
    ClientMsg, ErrorCode, Outcome, Seat, ServerMsg, TimeControl, Variant, PROTOCOL_VERSION,
};
use proptest::prelude::*;
use rmpv::Value;

const PROTOCOL_MD: &str = include_str!("../../PROTOCOL.md");

// ---------------------------------------------------------------------------------------
// One example of every message.

fn game_id() -> GameId {
    "6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab".parse().unwrap()
}

fn player(name: &str, rating: f64, guest: bool) -> PlayerInfo {
    PlayerInfo {
        name: name.into(),
        rating,
        guest,
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

fn snapshot() -> GameSnapshot {
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
fn client_type(msg: &ClientMsg) -> &'static str {
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
        OfferRematch { .. } => "offer_rematch",
        Commit { .. } => "commit",
        Reveal { .. } => "reveal",
        Resign { .. } => "resign",
        OfferDraw { .. } => "offer_draw",
        DeclineDraw { .. } => "decline_draw",
        ClaimWin { .. } => "claim_win",
        Sync { .. } => "sync",
        ListGames { .. } => "list_games",
        Watch { .. } => "watch",
        Unwatch { .. } => "unwatch",
    }
}

/// The snake_case `type` of a server message; exhaustive like [`client_type`].
fn server_type(msg: &ServerMsg) -> &'static str {
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
        Snapshot { .. } => "snapshot",
        QueueStatus { .. } => "queue_status",
        ChallengeReceived { .. } => "challenge_received",
        ChallengeDeclined { .. } => "challenge_declined",
        ChallengeCancelled { .. } => "challenge_cancelled",
        SeekRemoved { .. } => "seek_removed",
        RematchOffered { .. } => "rematch_offered",
        GameStart { .. } => "game_start",
        Spectators { .. } => "spectators",
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

fn client_examples() -> Vec<ClientMsg> {
    use ClientMsg::*;
    let g = game_id();
    vec![
        Hello {
            id: 1,
            protocol_version: PROTOCOL_VERSION,
            client: Some("example/1.0".into()),
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
    ]
}

fn server_examples() -> Vec<ServerMsg> {
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
        GameStart {
            game: game_info(),
            seat: Seat::One,
        },
        Spectators {
            game_id: g,
            count: 4,
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
        Notice {
            code: "superseded".into(),
            message: "signed in from another connection".into(),
        },
    ]
}

// ---------------------------------------------------------------------------------------
// Helpers.

/// Every variant name serde knows for `T`, read from the "expected one of" list of the
/// error for an unknown `type`: the protocol's own list, not one kept by hand.
fn declared_types<T: serde::de::DeserializeOwned + std::fmt::Debug>() -> BTreeSet<String> {
    let frame = map(vec![("type", Value::from("no_such_type"))]);
    let err = rmp_serde::from_slice::<T>(&frame).unwrap_err().to_string();
    let list = err
        .split("expected one of ")
        .nth(1)
        .unwrap_or_else(|| panic!("unexpected error text: {err}"));
    list.split(", ")
        .map(|name| name.trim_matches('`').to_owned())
        .collect()
}

/// Encode a map with string keys from (key, value) pairs, in order.
fn map(entries: Vec<(&str, Value)>) -> Vec<u8> {
    let value = Value::Map(
        entries
            .into_iter()
            .map(|(k, v)| (Value::from(k), v))
            .collect(),
    );
    bytes_of(&value)
}

fn bytes_of(value: &Value) -> Vec<u8> {
    let mut bytes = Vec::new();
    rmpv::encode::write_value(&mut bytes, value).unwrap();
    bytes
}

fn value_of(bytes: &[u8]) -> Value {
    let mut rd = bytes;
    let value = rmpv::decode::read_value(&mut rd).unwrap();
    assert!(rd.is_empty(), "one value per frame");
    value
}

/// The entries of a map value, panicking on anything else.
fn entries(value: &Value) -> &[(Value, Value)] {
    match value {
        Value::Map(entries) => entries,
        other => panic!("expected a map, got {other}"),
    }
}

fn get<'a>(value: &'a Value, key: &str) -> &'a Value {
    entries(value)
        .iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no key {key} in {value}"))
}

/// Every key of every map inside `value`, checking each is a string.
fn collect_keys(value: &Value, keys: &mut BTreeSet<String>) {
    match value {
        Value::Map(entries) => {
            for (k, v) in entries {
                let key = k.as_str().unwrap_or_else(|| panic!("non-string key {k}"));
                keys.insert(key.to_owned());
                collect_keys(v, keys);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_keys(v, keys)),
        _ => {}
    }
}

/// CamelCase to snake_case, for comparing a variant's Debug name with its `type`.
fn snake_case(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn variant_name(debug: &str) -> String {
    let end = debug
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(debug.len());
    snake_case(&debug[..end])
}

/// A client frame built from a valid `ping` with one field replaced or added.
fn ping_with(key: &str, value: Value) -> Vec<u8> {
    map(vec![("type", Value::from("ping")), (key, value)])
}

fn assert_refused(bytes: &[u8], expected: DecodeError) {
    let err = decode_client(bytes).unwrap_err();
    assert_eq!(err, expected, "frame {}", hex::encode(bytes));
}

fn assert_bad_message(bytes: &[u8]) -> DecodeError {
    let err = decode_client(bytes).unwrap_err();
    assert_eq!(err.code(), ErrorCode::BadMessage, "{err:?}");
    err
}

// ---------------------------------------------------------------------------------------
// Round trips and the shape of frames.

#[test]
fn examples_cover_every_declared_message_type() {
    let client: BTreeSet<String> = client_examples()
        .iter()
        .map(|m| client_type(m).to_owned())
        .collect();
    assert_eq!(client, declared_types::<ClientMsg>());
    let server: BTreeSet<String> = server_examples()
        .iter()
        .map(|m| server_type(m).to_owned())
        .collect();
    assert_eq!(server, declared_types::<ServerMsg>());
}

#[test]
fn every_client_message_round_trips() {
    for msg in client_examples() {
        let bytes = wire::encode(&msg);
        assert_eq!(bytes, wire::encode_client(&msg));
        assert!(bytes.len() <= MAX_CLIENT_MESSAGE_BYTES);
        assert_eq!(decode_client(&bytes), Ok(msg.clone()), "{msg:?}");
    }
}

#[test]
fn every_server_message_round_trips() {
    for msg in server_examples() {
        let bytes = wire::encode(&msg);
        assert_eq!(bytes, wire::encode_server(&msg));
        assert_eq!(decode_server(&bytes), Ok(msg.clone()), "{msg:?}");
    }
}

#[test]
fn every_frame_is_a_map_with_string_keys_and_a_snake_case_type_first() {
    let client = client_examples()
        .into_iter()
        .map(|m| (wire::encode(&m), client_type(&m), format!("{m:?}")));
    let server = server_examples()
        .into_iter()
        .map(|m| (wire::encode(&m), server_type(&m), format!("{m:?}")));
    for (bytes, name, debug) in client.chain(server) {
        let value = value_of(&bytes);
        let first = &entries(&value)[0];
        assert_eq!(first.0.as_str(), Some("type"), "{debug}");
        assert_eq!(first.1.as_str(), Some(name), "{debug}");
        assert_eq!(name, variant_name(&debug));
        collect_keys(&value, &mut BTreeSet::new());
    }
}

#[test]
fn field_encodings_are_as_documented() {
    let commit = value_of(&wire::encode(&client_examples()[18]));
    assert_eq!(get(&commit, "type").as_str(), Some("commit"));
    assert!(matches!(get(&commit, "commitment"), Value::Binary(b) if b.len() == 32));
    assert_eq!(
        get(&commit, "game_id").as_str(),
        Some("6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab")
    );
    let reveal = value_of(&wire::encode(&client_examples()[19]));
    assert!(matches!(get(&reveal, "nonce"), Value::Binary(b) if b.len() == 32));
    assert_eq!(get(&reveal, "pick").as_u64(), Some(5));

    let notice = value_of(&wire::encode(&server_examples().pop().unwrap()));
    assert_eq!(get(&notice, "code").as_str(), Some("superseded"));
    let rating = server_examples()
        .into_iter()
        .find(|m| server_type(m) == "rating_update")
        .unwrap();
    let rating = value_of(&wire::encode(&rating));
    let one = get(get(&rating, "ratings"), "one");
    assert!(matches!(get(one, "before"), Value::F64(r) if *r == 1.3));
    assert!(matches!(get(one, "after"), Value::F64(r) if *r == 1.8));

    // Absent options are nil, not missing; seats are "one" / "two"; enums are strings.
    let error = value_of(&wire::encode(&server_examples()[4]));
    assert_eq!(get(&error, "id"), &Value::Nil);
    assert_eq!(get(&error, "code").as_str(), Some("bad_message"));
    let snap = value_of(&wire::encode(&server_examples()[11]));
    assert_eq!(get(&snap, "seat"), &Value::Nil);
    let inner = get(&snap, "snapshot");
    assert_eq!(get(inner, "phase").as_str(), Some("reveal"));
    assert_eq!(get(inner, "draw_offer").as_str(), Some("one"));
    assert_eq!(get(inner, "result"), &Value::Nil);
    let players = get(get(inner, "game"), "players");
    assert_eq!(get(get(players, "two"), "name").as_str(), Some("bob"));
}

#[test]
fn client_fields_may_come_in_any_order_and_defaults_apply() {
    let hello = map(vec![
        ("protocol_version", Value::from(1)),
        ("id", Value::from(1)),
        ("type", Value::from("hello")),
    ]);
    assert_eq!(
        decode_client(&hello),
        Ok(ClientMsg::Hello {
            id: 1,
            protocol_version: 1,
            client: None
        })
    );
    let join = map(vec![
        ("type", Value::from("join_pool")),
        ("id", Value::from(8)),
        (
            "variant",
            Value::Map(vec![
                ("number".into(), 5.into()),
                ("range".into(), 2.into()),
                ("distance".into(), 3.into()),
            ]),
        ),
        ("time_control", Value::from("rapid")),
    ]);
    assert!(matches!(
        decode_client(&join),
        Ok(ClientMsg::JoinPool { rated: true, .. })
    ));
}

// ---------------------------------------------------------------------------------------
// Malformed input.

#[test]
fn empty_frame_is_truncated() {
    assert_refused(&[], DecodeError::Truncated);
    assert_eq!(DecodeError::Truncated.code(), ErrorCode::BadMessage);
}

#[test]
fn every_proper_prefix_of_every_message_is_truncated() {
    let client = client_examples()
        .iter()
        .map(wire::encode)
        .collect::<Vec<_>>();
    for bytes in &client {
        for len in 0..bytes.len() {
            assert_refused(&bytes[..len], DecodeError::Truncated);
        }
    }
    for msg in server_examples() {
        let bytes = wire::encode(&msg);
        for len in 0..bytes.len() {
            assert_eq!(
                decode_server(&bytes[..len]),
                Err(DecodeError::Truncated),
                "{msg:?} cut at {len}"
            );
        }
    }
}

#[test]
fn wrong_field_types_are_bad_messages() {
    let g = Value::from("6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab");
    let cases = [
        ping_with("id", Value::from("7")),
        ping_with("id", Value::from(-1)),
        ping_with("id", Value::from(u64::from(u32::MAX) + 1)),
        ping_with("id", Value::F64(7.0)),
        ping_with("id", Value::Nil),
        ping_with("id", Value::Ext(1, vec![7])),
        map(vec![("type", Value::from("ping"))]), // missing id
        map(vec![
            ("type", Value::from("watch")),
            ("id", Value::from(1)),
            ("game_id", Value::from("not-a-uuid")),
        ]),
        map(vec![
            ("type", Value::from("watch")),
            ("id", Value::from(1)),
            ("game_id", Value::Binary(vec![0; 16])),
        ]),
        map(vec![
            ("type", Value::from("commit")),
            ("id", Value::from(1)),
            ("game_id", g.clone()),
            ("round", Value::from(1)),
            ("commitment", Value::from("89".repeat(32))),
        ]),
        map(vec![
            ("type", Value::from("commit")),
            ("id", Value::from(1)),
            ("game_id", g.clone()),
            ("round", Value::from(1)),
            ("commitment", Value::Array(vec![Value::from(0x89); 32])),
        ]),
        map(vec![
            ("type", Value::from("reveal")),
            ("id", Value::from(1)),
            ("game_id", g.clone()),
            ("round", Value::from(1)),
            ("pick", Value::from(5)),
            ("nonce", Value::from("0".repeat(32))),
        ]),
        map(vec![
            ("type", Value::from("reveal")),
            ("id", Value::from(1)),
            ("game_id", g.clone()),
            ("round", Value::from(1)),
            ("pick", Value::from(70_000)),
            ("nonce", Value::Binary(vec![0; 32])),
        ]),
        map(vec![
            ("type", Value::from("join_pool")),
            ("id", Value::from(1)),
            ("variant", Value::from("classic")),
            ("time_control", Value::from("blitz")),
        ]),
        map(vec![
            ("type", Value::from("join_pool")),
            ("id", Value::from(1)),
            ("variant", Value::Map(vec![("number".into(), 5.into())])),
            ("time_control", Value::from("blitz")),
        ]),
        map(vec![
            ("type", Value::from("join_pool")),
            ("id", Value::from(1)),
            (
                "variant",
                Value::Map(vec![
                    ("number".into(), 5.into()),
                    ("range".into(), 2.into()),
                    ("distance".into(), 3.into()),
                ]),
            ),
            ("time_control", Value::from("blitz")),
            ("rated", Value::from(1)),
        ]),
        map(vec![
            ("type", Value::from("ping")),
            ("id", Value::from(1)),
            ("id", Value::from(2)),
        ]),
    ];
    for frame in cases {
        let err = assert_bad_message(&frame);
        assert!(matches!(err, DecodeError::Invalid(_)), "{err:?}");
    }
}

#[test]
fn lengths_of_four_gib_in_a_tiny_frame_are_refused_before_allocating() {
    let lies: [&[u8]; 6] = [
        &[0xdb, 0xff, 0xff, 0xff, 0xff, b'x'],       // str32
        &[0xc6, 0xff, 0xff, 0xff, 0xff, 0x00],       // bin32
        &[0xdd, 0xff, 0xff, 0xff, 0xff, 0x01],       // array32
        &[0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, b'k'], // map32
        &[0xc9, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00], // ext32
        &[0xdc, 0xff, 0xff, 0x01],                   // array16
    ];
    for lie in lies {
        let mut frame = ping_with("id", Value::from(1));
        frame[0] = 0x83;
        frame.extend([0xa1, b'x']);
        frame.extend(lie);
        assert_refused(&frame, DecodeError::Truncated);
    }
    assert_refused(&[0xdf, 0xff, 0xff, 0xff, 0xff], DecodeError::Truncated);
    assert_refused(&[0xde, 0xff, 0xff, 0xa1, b'k'], DecodeError::Truncated);
}

/// `{"a": [[[...nil...]]]}`: a map holding `levels - 1` nested arrays, so `levels`
/// containers in all; the innermost array holds a nil.
fn nested_arrays(levels: usize) -> Vec<u8> {
    let mut frame = vec![0x81, 0xa1, b'a'];
    frame.extend(std::iter::repeat_n(0x91, levels - 1));
    frame.push(0xc0);
    frame
}

/// `{"a": {"a": ... nil}}`: `levels` nested maps.
fn nested_maps(levels: usize) -> Vec<u8> {
    let mut frame = [0x81, 0xa1, b'a'].repeat(levels);
    frame.push(0xc0);
    frame
}

#[test]
fn ten_thousand_levels_are_too_deep_or_too_large() {
    let arrays = nested_arrays(10_000);
    assert!(arrays.len() <= MAX_CLIENT_MESSAGE_BYTES);
    assert_refused(&arrays, DecodeError::TooDeep);
    assert_eq!(decode_server(&arrays), Err(DecodeError::TooDeep));

    let maps = nested_maps(10_000);
    assert!(maps.len() > MAX_CLIENT_MESSAGE_BYTES);
    assert_refused(
        &maps,
        DecodeError::TooLarge {
            size: maps.len(),
            limit: MAX_CLIENT_MESSAGE_BYTES,
        },
    );
    assert_eq!(decode_server(&maps), Err(DecodeError::TooDeep));
}

#[test]
fn depth_limit_counts_the_top_level_map_as_one() {
    // The nil inside `MAX_DEPTH - 1` containers sits at depth MAX_DEPTH: accepted.
    for frame in [nested_arrays(MAX_DEPTH - 1), nested_maps(MAX_DEPTH - 1)] {
        assert_eq!(check_structure(&frame, MAX_CLIENT_MESSAGE_BYTES), Ok(()));
        // It is structurally fine, so serde decides: no `type`.
        assert_refused(&frame, DecodeError::NotAMap);
    }
    for frame in [nested_arrays(MAX_DEPTH), nested_maps(MAX_DEPTH)] {
        assert_refused(&frame, DecodeError::TooDeep);
    }
    // A deep nest in a real message, well within the size limit.
    let mut value = Value::from(1);
    for _ in 0..MAX_DEPTH {
        value = Value::Array(vec![value]);
    }
    assert_refused(&ping_with("extra", value), DecodeError::TooDeep);
}

#[test]
fn trailing_bytes_are_refused() {
    let ping = wire::encode(&ClientMsg::Ping { id: 1 });
    let mut frame = ping.clone();
    frame.push(0xc0);
    assert_refused(&frame, DecodeError::TrailingBytes(1));
    let mut twice = ping.clone();
    twice.extend(&ping);
    assert_refused(&twice, DecodeError::TrailingBytes(ping.len()));
    assert_eq!(DecodeError::TrailingBytes(1).code(), ErrorCode::BadMessage);
}

#[test]
fn unknown_type_and_unknown_field_have_their_own_codes() {
    let frame = map(vec![("type", Value::from("fly")), ("id", Value::from(1))]);
    let err = decode_client(&frame).unwrap_err();
    assert_eq!(err, DecodeError::UnknownType("fly".into()));
    assert_eq!(err.code(), ErrorCode::UnknownType);
    // A server message type is not a client message type.
    let frame = wire::encode(&ServerMsg::Pong { id: 1 });
    assert_refused(&frame, DecodeError::UnknownType("pong".into()));

    let frame = map(vec![
        ("type", Value::from("ping")),
        ("id", Value::from(1)),
        ("colour", Value::from("red")),
    ]);
    let err = decode_client(&frame).unwrap_err();
    assert_eq!(err, DecodeError::UnknownField("colour".into()));
    assert_eq!(err.code(), ErrorCode::UnknownField);
}

/// A request refused for anything but its structure still names its `id`, which a client
/// waits on: found by the structure walk, whatever serde makes of the rest.
#[test]
fn a_readable_id_is_found_whatever_else_is_wrong() {
    let game = Value::from("6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab");
    let id = |n: u64| ("id", Value::from(n));
    let cases: Vec<(&str, Vec<u8>, ErrorCode, Option<u32>)> = vec![
        (
            "an unknown type",
            map(vec![("type", Value::from("fly")), id(7)]),
            ErrorCode::UnknownType,
            Some(7),
        ),
        (
            "an unknown field, after the id",
            map(vec![
                ("type", Value::from("ping")),
                id(8),
                ("colour", 1.into()),
            ]),
            ErrorCode::UnknownField,
            Some(8),
        ),
        (
            "an unknown field, before the id",
            map(vec![
                ("colour", 1.into()),
                ("type", Value::from("ping")),
                id(9),
            ]),
            ErrorCode::UnknownField,
            Some(9),
        ),
        (
            "a missing field",
            map(vec![("type", Value::from("resign")), id(10)]),
            ErrorCode::BadMessage,
            Some(10),
        ),
        (
            "a field of the wrong type",
            map(vec![
                ("type", Value::from("commit")),
                ("game_id", game.clone()),
                ("round", Value::from("one")),
                ("commitment", Value::Binary(vec![0; 32])),
                id(11),
            ]),
            ErrorCode::BadMessage,
            Some(11),
        ),
        (
            "a bin where a string is due",
            map(vec![
                ("type", Value::from("resign")),
                id(12),
                ("game_id", Value::Binary(vec![1])),
            ]),
            ErrorCode::BadMessage,
            Some(12),
        ),
        (
            "no type",
            map(vec![id(13)]),
            ErrorCode::BadMessage,
            Some(13),
        ),
        (
            "a type that is not a string",
            map(vec![("type", Value::from(0)), id(14)]),
            ErrorCode::BadMessage,
            Some(14),
        ),
        (
            "the largest id in a u64 encoding",
            map(vec![
                ("type", Value::from("fly")),
                ("id", Value::from(u32::MAX as u64)),
            ]),
            ErrorCode::UnknownType,
            Some(u32::MAX),
        ),
        (
            "an id in a signed encoding",
            // {type: "fly", id: int 64 of 15}: encoders may write any int encoding.
            [
                &[0x82, 0xa4][..],
                b"type",
                &[0xa3],
                b"fly",
                &[0xa2],
                b"id",
                &[0xd3, 0, 0, 0, 0, 0, 0, 0, 15],
            ]
            .concat(),
            ErrorCode::UnknownType,
            Some(15),
        ),
        // Unreadable: nil.
        (
            "no id",
            map(vec![("type", Value::from("fly"))]),
            ErrorCode::UnknownType,
            None,
        ),
        (
            "an id over u32",
            map(vec![
                ("type", Value::from("ping")),
                ("id", Value::from(1u64 << 32)),
            ]),
            ErrorCode::BadMessage,
            None,
        ),
        (
            "a negative id",
            map(vec![("type", Value::from("ping")), ("id", Value::from(-1))]),
            ErrorCode::BadMessage,
            None,
        ),
        (
            "a string id",
            map(vec![
                ("type", Value::from("ping")),
                ("id", Value::from("1")),
            ]),
            ErrorCode::BadMessage,
            None,
        ),
        (
            "two ids",
            map(vec![("type", Value::from("ping")), id(1), id(2)]),
            ErrorCode::BadMessage,
            None,
        ),
        (
            "an id in a nested map only",
            map(vec![
                ("type", Value::from("join_pool")),
                ("variant", Value::Map(vec![("id".into(), 3.into())])),
            ]),
            ErrorCode::BadMessage,
            None,
        ),
        (
            "trailing bytes",
            [map(vec![("type", Value::from("ping")), id(16)]), vec![0xc0]].concat(),
            ErrorCode::BadMessage,
            None,
        ),
    ];
    for (what, frame, code, expected) in cases {
        let refused = wire::decode_request(&frame).expect_err(what);
        assert_eq!(
            (refused.error.code(), refused.id),
            (code, expected),
            "{what}"
        );
        assert_eq!(
            decode_client(&frame),
            Err(refused.error),
            "{what}: the same verdict as decode_client"
        );
    }
    // A valid request is decoded as ever.
    let ping = wire::encode(&ClientMsg::Ping { id: 5 });
    assert_eq!(wire::decode_request(&ping), Ok(ClientMsg::Ping { id: 5 }));
}

#[test]
fn servers_may_add_fields_that_clients_ignore() {
    let frame = map(vec![
        ("type", Value::from("pong")),
        ("id", Value::from(9)),
        ("server_time", Value::from(1_767_225_600_000u64)),
    ]);
    assert_eq!(decode_server(&frame), Ok(ServerMsg::Pong { id: 9 }));
}

#[test]
fn top_level_must_be_a_map_with_a_string_type() {
    let not_maps: [&[u8]; 6] = [
        &[0x90],       // empty array
        &[0x91, 0x01], // array
        &[0xc0],       // nil
        &[0x07],       // integer
        &[0xa4, b'p', b'i', b'n', b'g'],
        &[0xc4, 0x01, 0x00], // bin
    ];
    for frame in not_maps {
        assert_refused(frame, DecodeError::NotAMap);
    }
    assert_refused(&[0x80], DecodeError::NotAMap);
    assert_refused(&map(vec![("id", Value::from(1))]), DecodeError::NotAMap);
    assert_eq!(DecodeError::NotAMap.code(), ErrorCode::BadMessage);
    // serde would read `type: 0` as the first variant and `type: <bin "ping">` as ping.
    for tag in [
        Value::from(0),
        Value::from(1),
        Value::Binary(b"ping".to_vec()),
    ] {
        let frame = map(vec![
            ("type", tag),
            ("id", Value::from(1)),
            ("protocol_version", Value::from(1)),
        ]);
        assert_refused(&frame, DecodeError::NotAMap);
    }
}

#[test]
fn positional_array_encoding_is_refused() {
    // `rmp_serde::to_vec` writes structs as arrays: ["ping", 7].
    for msg in client_examples() {
        let positional = rmp_serde::to_vec(&msg).unwrap();
        assert_refused(&positional, DecodeError::NotAMap);
    }
}

#[test]
fn map_keys_must_be_strings() {
    // serde would read the integer key 0 as "the first field", i.e. `id`.
    let mut frame = map(vec![("type", Value::from("ping"))]);
    frame[0] = 0x82;
    frame.extend([0x00, 0x05]);
    assert_refused(&frame, DecodeError::InvalidMarker(0x00));
    // A bin key that spells a field name.
    let mut frame = map(vec![("type", Value::from("ping"))]);
    frame[0] = 0x82;
    frame.extend([0xc4, 0x02, b'i', b'd', 0x05]);
    assert_refused(&frame, DecodeError::InvalidMarker(0xc4));
    // Nested maps too.
    let frame = map(vec![
        ("type", Value::from("join_pool")),
        ("id", Value::from(1)),
        (
            "variant",
            Value::Map(vec![
                (Value::from(0), 5.into()),
                (Value::from(1), 2.into()),
                (Value::from(2), 3.into()),
            ]),
        ),
        ("time_control", Value::from("blitz")),
    ]);
    assert_refused(&frame, DecodeError::InvalidMarker(0x00));
    // A non-minimal string encoding is still a string.
    let frame = [
        &[0x82, 0xd9, 0x04][..],
        b"type",
        &[0xda, 0x00, 0x04],
        b"ping",
        &[0xa2],
        b"id",
        &[0x07],
    ]
    .concat();
    assert_eq!(decode_client(&frame), Ok(ClientMsg::Ping { id: 7 }));
}

#[test]
fn reserved_marker_is_refused() {
    let mut frame = ping_with("id", Value::from(1));
    *frame.last_mut().unwrap() = 0xc1;
    assert_refused(&frame, DecodeError::InvalidMarker(0xc1));
}

#[test]
fn oversize_frames_are_too_large() {
    let register = ClientMsg::Register {
        id: 1,
        name: "x".repeat(MAX_CLIENT_MESSAGE_BYTES),
        password: "correct horse".into(),
    };
    let frame = wire::encode(&register);
    let err = decode_client(&frame).unwrap_err();
    assert_eq!(
        err,
        DecodeError::TooLarge {
            size: frame.len(),
            limit: MAX_CLIENT_MESSAGE_BYTES
        }
    );
    assert_eq!(err.code(), ErrorCode::MessageTooLarge);
    assert_eq!(err.code().as_str(), "message_too_large");
    // The size is checked before anything else, even on garbage.
    let garbage = vec![0xc1; MAX_CLIENT_MESSAGE_BYTES + 1];
    assert!(matches!(
        decode_client(&garbage),
        Err(DecodeError::TooLarge { .. })
    ));
    // The same frame is fine for a server message's larger limit.
    assert!(frame.len() < MAX_SERVER_MESSAGE_BYTES);
}

#[test]
fn a_frame_of_exactly_the_limit_is_accepted() {
    let empty = wire::encode(&ClientMsg::Register {
        id: 1,
        name: String::new(),
        password: "p".into(),
    });
    // A str16 name: 3 header bytes instead of fixstr's 1.
    let name_len = MAX_CLIENT_MESSAGE_BYTES - empty.len() - 2;
    let msg = ClientMsg::Register {
        id: 1,
        name: "n".repeat(name_len),
        password: "p".into(),
    };
    let frame = wire::encode(&msg);
    assert_eq!(frame.len(), MAX_CLIENT_MESSAGE_BYTES);
    assert_eq!(decode_client(&frame), Ok(msg));
}

// ---------------------------------------------------------------------------------------
// Never panics.

/// Any MessagePack value, a few levels deep.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (0u64..100).prop_map(Value::from),
        any::<f64>().prop_map(Value::F64),
        any::<f32>().prop_map(Value::F32),
        "[a-z_]{0,12}".prop_map(Value::from),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Binary),
        (any::<i8>(), proptest::collection::vec(any::<u8>(), 0..4))
            .prop_map(|(t, d)| Value::Ext(t, d)),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec(("[a-z_]{1,16}", inner), 0..6).prop_map(|kv| {
                Value::Map(kv.into_iter().map(|(k, v)| (Value::from(k), v)).collect())
            }),
        ]
    })
}

/// Every field name any client message uses, to aim random values at real fields.
fn client_field_names() -> Vec<String> {
    let mut keys = BTreeSet::new();
    for msg in client_examples() {
        collect_keys(&value_of(&wire::encode(&msg)), &mut keys);
    }
    keys.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_client(&bytes);
        let _ = decode_server(&bytes);
    }

    #[test]
    fn arbitrary_bytes_after_a_map_marker_never_panic(
        marker in prop_oneof![0x80u8..=0x8f, Just(0xde), Just(0xdf)],
        rest in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut bytes = vec![marker];
        bytes.extend(rest);
        let _ = decode_client(&bytes);
        let _ = decode_server(&bytes);
    }

    #[test]
    fn mutated_messages_never_panic_and_decode_stably(
        pick in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let examples = client_examples();
        let mut bytes = wire::encode(&examples[pick.index(examples.len())]);
        for (at, byte, kind) in edits {
            let i = at.index(bytes.len() + 1);
            match kind {
                0 if i < bytes.len() => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ if i < bytes.len() => { bytes.remove(i); }
                _ => bytes.push(byte),
            }
        }
        if let Ok(msg) = decode_client(&bytes) {
            // Whatever was accepted re-encodes to something accepted as the same message.
            prop_assert_eq!(decode_client(&wire::encode(&msg)), Ok(msg));
        }
    }

    #[test]
    fn random_values_in_real_fields_never_panic(
        ty in prop::sample::select(declared_types::<ClientMsg>().into_iter().collect::<Vec<_>>()),
        fields in proptest::collection::vec(
            (prop::sample::select(client_field_names()), any_value()), 0..6),
    ) {
        let mut entries = vec![(Value::from("type"), Value::from(ty))];
        entries.extend(fields.into_iter().map(|(k, v)| (Value::from(k), v)));
        let bytes = bytes_of(&Value::Map(entries));
        match decode_client(&bytes) {
            Ok(msg) => prop_assert_eq!(decode_client(&wire::encode(&msg)), Ok(msg)),
            Err(err) => prop_assert!(matches!(
                err.code(),
                ErrorCode::BadMessage | ErrorCode::UnknownField | ErrorCode::MessageTooLarge
            )),
        }
    }
}

// ---------------------------------------------------------------------------------------
// PROTOCOL.md documents all of it.

/// The text of the section under a `#### \`name\`` heading, up to the next heading.
fn doc_section(name: &str) -> &'static str {
    let heading = format!("#### `{name}`");
    let start = PROTOCOL_MD
        .find(&format!("{heading}\n"))
        .unwrap_or_else(|| panic!("PROTOCOL.md has no heading {heading}"));
    let body = &PROTOCOL_MD[start + heading.len()..];
    let end = body.find("\n#").unwrap_or(body.len());
    &body[..end]
}

#[test]
fn protocol_md_lists_every_error_code_as_in_the_code() {
    for code in ErrorCode::ALL {
        let row = format!("| `{}` | {} |", code.as_str(), code.description());
        assert!(
            PROTOCOL_MD.contains(&row),
            "PROTOCOL.md lacks the row\n{row}"
        );
    }
    // And in the same order, in the table of section 10.
    let table = &PROTOCOL_MD[PROTOCOL_MD.find("### Error codes").unwrap()..];
    let positions: Vec<usize> = ErrorCode::ALL
        .iter()
        .map(|c| table.find(&format!("| `{}` |", c.as_str())).unwrap())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn protocol_md_documents_every_message_and_each_of_its_fields() {
    let client = client_examples()
        .into_iter()
        .map(|m| (client_type(&m), wire::encode(&m)));
    let server = server_examples()
        .into_iter()
        .map(|m| (server_type(&m), wire::encode(&m)));
    for (name, bytes) in client.chain(server) {
        let section = doc_section(name);
        for (key, _) in entries(&value_of(&bytes)).iter().skip(1) {
            let key = key.as_str().unwrap();
            let row = format!("| `{key}` |");
            assert!(
                section.contains(&row),
                "PROTOCOL.md's `{name}` has no field row {row}"
            );
        }
    }
}

#[test]
fn protocol_md_documents_every_nested_field() {
    let mut keys = BTreeSet::new();
    for msg in server_examples() {
        collect_keys(&value_of(&wire::encode(&msg)), &mut keys);
    }
    for msg in client_examples() {
        collect_keys(&value_of(&wire::encode(&msg)), &mut keys);
    }
    for key in keys {
        assert!(
            PROTOCOL_MD.contains(&format!("| `{key}` |")),
            "no field row for `{key}`"
        );
    }
    for name in [
        "Account",
        "PlayerInfo",
        "GameInfo",
        "Clocks",
        "RoundRecord",
        "Outcome",
        "Move",
        "Phase",
        "EndReason",
        "GameResult",
        "GameSnapshot",
        "LiveGame",
        "Seek",
        "Challenge",
        "Limits",
        "SeatPair",
        "RatingChange",
        "Variant",
        "TimeControl",
    ] {
        doc_section(name);
    }
    for field in [
        "max_message_bytes",
        "max_messages_per_s",
        "heartbeat_ms",
        "idle_timeout_ms",
        "max_rounds",
    ] {
        assert!(doc_section("Limits").contains(&format!("| `{field}` |")));
    }
    for phase in ["commit", "reveal", "over"] {
        assert!(doc_section("Phase").contains(&format!("`{phase}`")));
    }
    for reason in [
        "edge",
        "time",
        "no_reveal",
        "resignation",
        "abandoned",
        "draw_agreed",
        "aborted",
        "server_aborted",
        "max_rounds",
    ] {
        assert!(doc_section("EndReason").contains(&format!("| `{reason}` |")));
    }
}

#[test]
fn protocol_md_states_the_limits_and_presets_of_the_code() {
    let must = [
        format!("| `MAX_CLIENT_MESSAGE_BYTES` | {MAX_CLIENT_MESSAGE_BYTES} |"),
        format!("| `MAX_SERVER_MESSAGE_BYTES` | {MAX_SERVER_MESSAGE_BYTES} |"),
        format!("| `MAX_DEPTH` | {MAX_DEPTH} |"),
        format!("| `MAX_NUMBER` | {MAX_NUMBER} |"),
        format!("| `MAX_DISTANCE` | {MAX_DISTANCE} |"),
        format!("| `MAX_ROUNDS` | {MAX_ROUNDS} |"),
        format!("| `initial_ms` | {MIN_INITIAL_MS} | {MAX_INITIAL_MS} |"),
        format!("| `increment_ms` | 0 | {MAX_INCREMENT_MS} |"),
        format!("| `reveal_ms` | {MIN_REVEAL_MS} | {MAX_REVEAL_MS} |"),
        format!("`protocol_version` is `{PROTOCOL_VERSION}`"),
    ];
    for line in must {
        assert!(PROTOCOL_MD.contains(&line), "PROTOCOL.md lacks {line}");
    }
    for (name, tc) in TimeControl::PRESETS {
        let row = format!(
            "| `{name}` | {} | {} | {} |",
            tc.initial_ms, tc.increment_ms, tc.reveal_ms
        );
        assert!(
            PROTOCOL_MD.contains(&row),
            "PROTOCOL.md lacks the preset row {row}"
        );
    }
}
