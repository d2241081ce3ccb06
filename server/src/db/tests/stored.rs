//! How a game's record is stored: a versioned MessagePack BLOB that reads back as exactly
//! the JSON of the record.

use elementals_protocol::rules::{Move, Outcome};
use proptest::prelude::*;
use rusqlite::types::Value;

use super::super::stored;
use super::*;
use crate::record::{Hash32, RoundLog};

fn random_hash() -> Hash32 {
    Hash32(rand::random())
}

/// `won`, with `rounds` rounds of distinct commitments and nonces, ties and moves.
fn played(one: &AccountRow, two: &AccountRow, rounds: u32) -> GameRecord {
    let mut record = won(one, two, Seat::One);
    record.rounds = (1..=rounds)
        .map(|round| RoundLog {
            round,
            commitments: SeatPair::new(random_hash(), random_hash()),
            nonces: SeatPair::new(random_hash(), random_hash()),
            picks: SeatPair::new(1 + (round % 5) as u16, 1 + (round * 3 % 5) as u16),
            outcome: if round % 3 == 0 {
                Outcome {
                    winner: None,
                    moved: None,
                }
            } else {
                Outcome {
                    winner: Some(Seat::One),
                    moved: Some(Move {
                        element: 2,
                        by: Seat::One,
                        from: -1,
                        to: 0,
                    }),
                }
            },
            positions: vec![0, 1, -1, 2, (round % 4) as i16],
            clocks_ms: SeatPair::new(170_000 - u64::from(round), 165_000),
            escrowed: Default::default(),
        })
        .collect();
    record
}

/// The `games.record` value of a game and its SQLite type.
fn stored_value(path: &Path, game_id: &str) -> (Vec<u8>, String) {
    side_connection(path)
        .query_row(
            "SELECT CAST(record AS BLOB), typeof(record) FROM games WHERE id = ?1",
            [game_id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap()
}

fn set_stored_value(path: &Path, game_id: &str, value: Value) {
    side_connection(path)
        .execute(
            "UPDATE games SET record = ?1 WHERE id = ?2",
            rusqlite::params![value, game_id],
        )
        .unwrap();
}

/// A database with one `played` game of `rounds` rounds recorded and written; its id.
async fn one_recorded_game(rounds: u32) -> (TestDb, GameRecord, String) {
    let t = open_db();
    let ann = register(&t.db, "Ann").await;
    let bob = register(&t.db, "Bob").await;
    let record = played(&ann, &bob, rounds);
    let id = record.game_id.to_string();
    t.db.record_game(record.clone()).await.unwrap();
    t.db.flush().await.unwrap();
    (t, record, id)
}

#[tokio::test]
async fn a_played_game_is_stored_compactly_and_reads_back_as_its_json() {
    let t = open_db();
    let ann = register(&t.db, "Ann").await;
    let bob = register(&t.db, "Bob").await;
    let record = played(&ann, &bob, 30);
    let id = record.game_id.to_string();
    t.db.record_game(record.clone()).await.unwrap();

    assert_eq!(
        t.db.game_record(id.clone()).await.unwrap(),
        Some(serde_json::to_value(&record).unwrap())
    );
    t.db.flush().await.unwrap();
    let (bytes, kind) = stored_value(&t.path, &id);
    assert_eq!(kind, "blob");
    assert_eq!(bytes[0], 1, "format version");
    let json = serde_json::to_vec(&record).unwrap().len();
    assert!(
        bytes.len() * 2 < json,
        "{} bytes stored for {json} bytes of JSON",
        bytes.len()
    );
    assert_eq!(stored::decode(&bytes).unwrap(), record);
}

#[tokio::test]
async fn a_corrupt_or_unknown_record_is_an_error_not_a_panic() {
    let (t, record, id) = one_recorded_game(3).await;
    let (good, _) = stored_value(&t.path, &id);

    let mut unknown = good.clone();
    unknown[0] = 99;
    let mut trailing = good.clone();
    trailing.push(0xc0);
    let truncated = good[..good.len() / 2].to_vec();
    let mut wrong_length = good.clone();
    // The first commitment's `bin 8` length byte (32) is right after its header.
    let at = wrong_length
        .windows(2)
        .position(|w| w == [0xc4, 32])
        .unwrap();
    wrong_length[at + 1] = 31;
    let cases = [
        (Value::Blob(unknown), "record format 99 is unknown"),
        (Value::Blob(trailing), "1 bytes after its end"),
        (Value::Blob(truncated), "corrupt record (format 1)"),
        (Value::Blob(wrong_length), "corrupt record (format 1)"),
        (Value::Blob(Vec::new()), "empty record"),
        (Value::Blob(vec![1]), "corrupt record (format 1)"),
        (Value::Text("{not json".into()), "stored record of game"),
    ];
    for (value, expected) in cases {
        set_stored_value(&t.path, &id, value.clone());
        match t.db.game_record(id.clone()).await {
            Err(DbError::Sqlite(message)) => assert!(
                message.contains(expected) && message.contains(&id),
                "{value:?}: {message}"
            ),
            other => panic!("{value:?}: {other:?}"),
        }
    }
    // The writer survived them all.
    set_stored_value(&t.path, &id, Value::Blob(good));
    assert_eq!(
        t.db.game_record(id).await.unwrap(),
        Some(serde_json::to_value(&record).unwrap())
    );
}

proptest! {
    /// Whatever bytes a round holds for its commitments and nonces come back as they were,
    /// from the stored BLOB and from the API's JSON.
    #[test]
    fn any_recorded_hashes_come_back_unchanged(
        hashes in proptest::collection::vec(proptest::array::uniform32(any::<u8>()), 4)
    ) {
        let account = |id, name: &str| AccountRow {
            id,
            name: name.into(),
            password_hash: None,
            guest: false,
            rating: 1.0,
            wins: 0,
            losses: 0,
            draws: 0,
        };
        let mut record = played(&account(1, "Ann"), &account(2, "Bob"), 1);
        let round = &mut record.rounds[0];
        round.commitments = SeatPair::new(Hash32(hashes[0]), Hash32(hashes[1]));
        round.nonces = SeatPair::new(Hash32(hashes[2]), Hash32(hashes[3]));
        let bytes = stored::encode(&record).unwrap();
        prop_assert_eq!(stored::decode(&bytes).unwrap(), record.clone());
        let json = serde_json::to_value(&record).unwrap();
        let nonce_hex = hex::encode(hashes[3]);
        prop_assert_eq!(json["rounds"][0]["nonces"]["two"].as_str(), Some(nonce_hex.as_str()));
        prop_assert_eq!(serde_json::from_value::<GameRecord>(json).unwrap(), record);
    }
}
