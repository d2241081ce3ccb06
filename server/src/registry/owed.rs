//! What each live game waits for, a player's open games (`my_games`), and the `your_move`
//! push to the connections that asked for that list.
//!
//! Kept for this node's games only: in cluster mode a player seated in another node's game
//! is answered an empty list (the cluster's directory carries no owed state yet), and is
//! pushed `your_move` only for games of the node it is connected to.

use bytes::Bytes;
use elementals_protocol::messages::{GameId, MyGame, Owed, ServerMsg};
use elementals_protocol::wire;

use super::Registry;
use crate::bus::ConnId;
use crate::game::OwedNow;
use crate::record::AccountId;

impl Registry {
    /// What a live game waits for now; written only when it has changed (a few times a
    /// round), so each of the game's events costs one shard's read lock here. A seat whose
    /// action has just become owed (a new round's commit, the reveal phase) is pushed
    /// `your_move`, once per such change, if its account follows (`follow_moves`).
    pub fn set_owed(&self, game_id: GameId, owed: OwedNow) {
        let newly: Vec<Owed> = {
            let known = self.owed.get(&game_id);
            if known.as_deref() == Some(&owed) {
                return;
            }
            // Nobody follows (no client asked `my_games`): nothing to work out.
            if self.followers.is_empty() {
                Vec::new()
            } else {
                let known = known.as_deref();
                owed.owed
                    .iter()
                    .filter(|o| !known.is_some_and(|k| is_owed_in(k, owed.round, o)))
                    .copied()
                    .collect()
            }
        };
        let round = owed.round;
        self.owed.insert(game_id, owed);
        if !newly.is_empty() {
            self.tell_your_move(game_id, round, &newly);
        }
    }

    /// `account`'s connection `conn` asked `my_games`: from now on it is pushed `your_move`
    /// (until the account's connection changes or it signs out).
    pub fn follow_moves(&self, account: AccountId, conn: ConnId) {
        self.followers.insert(account, conn);
    }

    /// Stops following for `account` if its follower connection is one `gone` names.
    pub(super) fn unfollow(&self, account: AccountId, gone: impl FnOnce(ConnId) -> bool) {
        self.followers.remove_if(&account, |_, conn| gone(*conn));
    }

    fn tell_your_move(&self, game_id: GameId, round: u32, newly: &[Owed]) {
        let Some(seats) = self.games.get(&game_id).map(|e| e.seats) else {
            return;
        };
        for owed in newly {
            let Some(conn) = self.followers.get(seats.get(owed.seat)).map(|c| *c) else {
                continue;
            };
            let frame = Bytes::from(wire::encode(&ServerMsg::YourMove {
                game_id,
                seat: owed.seat,
                round,
                action: owed.action,
                deadline: owed.deadline,
            }));
            // Nothing waits: a full queue loses a push whose news the game's events and
            // `my_games` also carry.
            let _ = self.bus.send(conn, frame);
        }
    }

    /// The open games `account` sits in, each with what it waits for. Live games allow one
    /// seat per account, so this holds at most one game today.
    pub fn my_games(&self, account: AccountId) -> Vec<MyGame> {
        let Some((game_id, seat)) = self.seated.get(&account).map(|e| *e) else {
            return Vec::new();
        };
        let Some(summary) = self.games.get(&game_id).map(|e| e.summary.clone()) else {
            return Vec::new();
        };
        let Some(owed) = self.owed.get(&game_id).map(|e| e.clone()) else {
            return Vec::new();
        };
        vec![MyGame {
            game_id,
            seat,
            opponent: summary.players.get(seat.other()).clone(),
            variant: summary.variant,
            time_control: summary.time_control,
            rated: summary.rated,
            round: owed.round,
            phase: owed.phase,
            owed: owed.owed,
        }]
    }
}

/// Whether `known` already owed `o`'s action from `o`'s seat in `round` (a deadline that
/// moved, a hold, is no new news).
fn is_owed_in(known: &OwedNow, round: u32, o: &Owed) -> bool {
    known.round == round
        && known
            .owed
            .iter()
            .any(|k| k.seat == o.seat && k.action == o.action)
}
