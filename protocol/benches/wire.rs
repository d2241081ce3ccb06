//! The cost of decoding frames: what every reader of the server pays per client frame,
//! and every client (the load generator's players among them) per server frame.
//!
//! `cargo bench -p elementals-protocol --bench wire`. The frames are one ordinary round
//! as a player sees it: its `commit` and `reveal`, and the server's `ok`s and events.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

use elementals_protocol::messages::{Clocks, GameId, RoundRecord, SeatPair};
use elementals_protocol::rules::{Move, Outcome, Seat};
use elementals_protocol::{wire, ClientMsg, ServerMsg};

fn clocks() -> Clocks {
    Clocks {
        one_ms: 178_250,
        two_ms: 181_000,
        running: SeatPair::new(true, true),
    }
}

fn client_frames(game_id: GameId) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "commit",
            wire::encode_client(&ClientMsg::Commit {
                id: 41,
                game_id,
                round: 7,
                commitment: vec![0xAB; 32],
                pick: None,
                nonce: None,
            }),
        ),
        (
            "reveal",
            wire::encode_client(&ClientMsg::Reveal {
                id: 42,
                game_id,
                round: 7,
                pick: 3,
                nonce: vec![0x5C; 32],
            }),
        ),
    ]
}

fn server_frames(game_id: GameId) -> Vec<(&'static str, Vec<u8>)> {
    let seq = 30;
    let round = 7;
    vec![
        ("ok", wire::encode_server(&ServerMsg::Ok { id: 41 })),
        (
            "committed",
            wire::encode_server(&ServerMsg::Committed {
                game_id,
                seq,
                round,
                seat: Seat::Two,
                clocks: clocks(),
            }),
        ),
        (
            "reveal_phase",
            wire::encode_server(&ServerMsg::RevealPhase {
                game_id,
                seq,
                round,
                reveal_ms: 10_000,
                clocks: clocks(),
            }),
        ),
        (
            "round_result",
            wire::encode_server(&ServerMsg::RoundResult {
                game_id,
                seq,
                record: RoundRecord {
                    round,
                    picks: SeatPair::new(3, 1),
                    outcome: Outcome {
                        winner: Some(Seat::One),
                        moved: Some(Move {
                            element: 3,
                            by: Seat::One,
                            from: 1,
                            to: 2,
                        }),
                    },
                    positions: vec![0, 0, 2, -1, 0],
                },
                clocks: clocks(),
            }),
        ),
    ]
}

fn decode(c: &mut Criterion) {
    let game_id = GameId::new_random_from([7; 16]);
    let mut group = c.benchmark_group("decode");
    for (name, frame) in client_frames(game_id) {
        group.throughput(Throughput::Bytes(frame.len() as u64));
        group.bench_function(format!("client/{name}"), |b| {
            b.iter(|| wire::decode_client(black_box(&frame)).unwrap())
        });
    }
    for (name, frame) in server_frames(game_id) {
        group.throughput(Throughput::Bytes(frame.len() as u64));
        group.bench_function(format!("server/{name}"), |b| {
            b.iter(|| wire::decode_server(black_box(&frame)).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
