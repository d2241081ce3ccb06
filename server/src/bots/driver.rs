//! One bot's task in one game: reads what its seat's connection is sent, keeps the game as a
//! player's client would (a snapshot moved along by the numbered events), and moves
//! through the seat's handle.

use std::sync::Arc;

use elementals_protocol::commitment;
use elementals_protocol::messages::{GameSnapshot, Phase, ServerMsg};
use elementals_protocol::strategy::GameView;
use elementals_protocol::wire;
use tokio_util::sync::CancellationToken;

use super::{Bot, BotConn};
use crate::bus::{Bus, ReplyTo};
use crate::game::{PlayerHandle, SeatAction};
use crate::outbox::{Other, Outbound};

pub(super) struct Driver {
    bot: Bot,
    seat: PlayerHandle,
    bus: Arc<dyn Bus>,
    /// The game as its seat was last told it.
    game: Option<GameSnapshot>,
    /// The round and phase of the move sent last, so that each is sent once.
    sent: Option<(u32, Phase)>,
    /// The round committed to, its pick and nonce, for the reveal.
    sealed: Option<(u32, u16, [u8; commitment::NONCE_LEN])>,
    next_id: u32,
}

enum Go {
    On,
    Over,
}

impl Driver {
    pub(super) fn new(bot: Bot, seat: PlayerHandle, bus: Arc<dyn Bus>) -> Driver {
        Driver {
            bot,
            seat,
            bus,
            game: None,
            sent: None,
            sealed: None,
            next_id: 0,
        }
    }

    pub(super) async fn run(mut self, mut conn: BotConn, stop: CancellationToken) {
        let conn_id = conn.conn_id();
        // A game that has gone (ended before its seating) has no seat to attach.
        if self.seat.attach_outbox(&conn.outbox).await {
            'read: loop {
                let item = tokio::select! {
                    () = stop.cancelled() => break,
                    item = conn.rx.recv() => item,
                };
                let Some(item) = item else { break };
                if matches!(item, Outbound::Other(Other::Close { .. })) {
                    break;
                }
                for frame in item.frames() {
                    let Ok(msg) = wire::decode_server(frame) else {
                        continue;
                    };
                    if let Go::Over = self.handle(msg, &conn).await {
                        break 'read;
                    }
                }
            }
        }
        self.seat.detach(conn_id);
        self.bus.disconnect(conn_id);
    }

    async fn handle(&mut self, msg: ServerMsg, conn: &BotConn) -> Go {
        if let ServerMsg::Snapshot { snapshot, .. } = msg {
            return self.replace(snapshot, conn).await;
        }
        let Some(seq) = msg.seq() else {
            return Go::On;
        };
        let Some(game) = self.game.as_mut() else {
            // Events before the first snapshot are in it.
            return Go::On;
        };
        if seq <= game.seq {
            return Go::On;
        }
        if seq > game.seq + 1 {
            // A gap: ask for the game as it stands, as a client's `sync` would. The
            // snapshot comes after what is queued already, which it covers.
            self.game = None;
            return if self.seat.attach_outbox(&conn.outbox).await {
                Go::On
            } else {
                Go::Over
            };
        }
        game.seq = seq;
        let mine = self.seat.seat();
        match msg {
            ServerMsg::RoundStart { round, .. } => {
                game.round = round;
                game.phase = Phase::Commit;
                game.committed = Default::default();
                game.revealed = Default::default();
                game.draw_offer = None;
            }
            ServerMsg::Committed { seat, .. } => *game.committed.get_mut(seat) = true,
            ServerMsg::RevealPhase { .. } => game.phase = Phase::Reveal,
            ServerMsg::Revealed { seat, .. } => *game.revealed.get_mut(seat) = true,
            ServerMsg::RoundResult { record, .. } => {
                game.positions.clone_from(&record.positions);
                game.rounds.push(record);
            }
            ServerMsg::DrawOffered { by, .. } if by != mine => {
                self.send(SeatAction::DeclineDraw, conn).await;
            }
            ServerMsg::GameOver { .. } => return Go::Over,
            _ => {}
        }
        self.act(conn).await;
        Go::On
    }

    async fn replace(&mut self, snapshot: GameSnapshot, conn: &BotConn) -> Go {
        if snapshot.phase == Phase::Over {
            return Go::Over;
        }
        self.game = Some(snapshot);
        self.act(conn).await;
        Go::On
    }

    /// Commits or reveals, if the round waits for this seat to.
    async fn act(&mut self, conn: &BotConn) {
        let Some(game) = self.game.as_ref() else {
            return;
        };
        let seat = self.seat.seat();
        let (round, phase) = (game.round, game.phase);
        let due = match phase {
            Phase::Commit => !game.committed.get(seat),
            Phase::Reveal => !game.revealed.get(seat),
            Phase::Over => false,
        };
        if !due || self.sent == Some((round, phase)) {
            return;
        }
        let game_id = game.game.game_id;
        let action = match (phase, self.sealed) {
            (Phase::Commit, _) => {
                let view = GameView {
                    variant: game.game.variant,
                    seat,
                    round,
                    positions: &game.positions,
                    history: &game.rounds,
                };
                let pick = self.bot.strategy().pick(&view);
                let nonce: [u8; commitment::NONCE_LEN] = rand::random();
                self.sealed = Some((round, pick, nonce));
                SeatAction::Commit {
                    round,
                    commitment: commitment::make(&game_id.0, round, seat, pick, &nonce).to_vec(),
                    pick: None,
                    nonce: None,
                }
            }
            (_, Some((sealed, pick, nonce))) if sealed == round => SeatAction::Reveal {
                round,
                pick,
                nonce: nonce.to_vec(),
            },
            // Committed by another task of this bot's (none runs twice), or never: nothing
            // to reveal.
            _ => return,
        };
        self.sent = Some((round, phase));
        self.send(action, conn).await;
    }

    /// Moves as a player's connection does: the answer comes back to the bot's connection
    /// (and is read past, as the events tell the same).
    async fn send(&mut self, action: SeatAction, conn: &BotConn) {
        self.next_id = self.next_id.wrapping_add(1);
        let reply = ReplyTo {
            conn: conn.conn_id(),
            request_id: Some(self.next_id),
            settle: false,
        };
        self.seat
            .act(action, reply, tokio::time::Instant::now())
            .await;
    }
}
