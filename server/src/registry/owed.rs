//! What each live game waits for, a player's open games (`my_games`), and the `your_move`
//! push to the connections that asked for that list.
//!
//! Kept for this node's games only. In cluster mode a player seated in another node's game
//! (the directory says which) is answered with what that node says when asked
//! (`bus/redis/asks.rs`), and the game's summary from the directory; `your_move` is pushed
//! only for games of the node the player is connected to.

use bytes::Bytes;
use elementals_protocol::messages::{GameId, LiveGame, MyGame, Owed, ServerMsg};
use elementals_protocol::rules::Seat;
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

    /// What a game just woken waits for: what it waited for when it went to sleep (its
    /// round is kept), which its players were pushed then, or which became owed while
    /// nobody followed. Nothing is newly owed, so nobody is pushed `your_move` again.
    pub fn set_owed_woken(&self, game_id: GameId, owed: OwedNow) {
        self.owed.insert(game_id, owed);
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

    /// What this node's live game `game_id` waits for now.
    pub fn owed_of(&self, game_id: &GameId) -> Option<OwedNow> {
        self.owed.get(game_id).map(|e| e.clone())
    }

    /// The open games `account` sits in, each with what it waits for: on this node, or in
    /// cluster mode on any node (one round trip to the game's node, at most
    /// `ASK_TIMEOUT`; a node that does not answer in time leaves its game out).
    pub async fn my_games(&self, account: AccountId) -> Vec<MyGame> {
        let here = self.my_games_here(account);
        if !here.is_empty() {
            return here;
        }
        let (Some(cluster), Some(redis)) = (&self.cluster, &self.redis) else {
            return here;
        };
        let Some((game_id, seat)) = cluster.seat_of(account) else {
            return here;
        };
        let Some((node, summary)) = cluster.entry_of(game_id) else {
            return here;
        };
        match redis.ask_owed(node, game_id).await {
            Some(owed) => vec![my_game(game_id, seat, &summary, owed)],
            None => here,
        }
    }

    /// The open games `account` sits in on this node. Live games allow one seat per
    /// account, so this holds at most one game today.
    fn my_games_here(&self, account: AccountId) -> Vec<MyGame> {
        let Some((game_id, seat)) = self.seated.get(&account).map(|e| *e) else {
            return Vec::new();
        };
        let Some(summary) = self.games.get(&game_id).map(|e| e.summary.clone()) else {
            return Vec::new();
        };
        let Some(owed) = self.owed.get(&game_id).map(|e| e.clone()) else {
            return Vec::new();
        };
        vec![my_game(game_id, seat, &summary, owed)]
    }
}

/// `account`'s entry for game `game_id`, where it sits in `seat`.
fn my_game(game_id: GameId, seat: Seat, summary: &LiveGame, owed: OwedNow) -> MyGame {
    MyGame {
        game_id,
        seat,
        opponent: summary.players.get(seat.other()).clone(),
        variant: summary.variant,
        time_control: summary.time_control,
        rated: summary.rated,
        round: owed.round,
        phase: owed.phase,
        owed: owed.owed,
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
