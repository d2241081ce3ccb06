//! What each live game waits for, a player's open games (`my_games`), and the `your_move`
//! push to the connections that asked for that list.
//!
//! Kept for this node's games only. In cluster mode a player seated in another node's game
//! (the directory says which) is answered with what that node says when asked
//! (`bus/redis/asks.rs`), and the game's summary from the directory. `your_move` reaches a
//! follower wherever it is connected: its node tells the game's node that it follows
//! (`NodeMsg::Follow`, when it hears the game open and when it asks `my_games`), and the
//! game's node pushes to that connection through the bus like to one of its own.

use bytes::Bytes;
use elementals_protocol::messages::{
    GameId, LiveGame, MyGame, Owed, OwedAction, SeatPair, ServerMsg,
};
use elementals_protocol::rules::Seat;
use elementals_protocol::wire;

use super::{Registry, SeatAt};
use crate::bus::ConnId;
use crate::msg::OwedNow;
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
            let known = known.as_deref();
            owed.owed
                .iter()
                .filter(|o| !known.is_some_and(|k| is_owed_in(k, owed.round, o)))
                .copied()
                .collect()
        };
        let round = owed.round;
        // Stored before the followers are read: a follower that arrives meanwhile
        // (`follow_here`) reads it after it is in, so one of the two pushes it.
        self.owed.insert(game_id, owed);
        // Nobody follows (no client asked `my_games`): nothing to push.
        if !newly.is_empty() && !self.followers.is_empty() {
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
    /// (until the account's connection changes or it signs out). In cluster mode `conn`
    /// may be another node's (`follow_here`).
    pub fn follow_moves(&self, account: AccountId, conn: ConnId) {
        let mut follower = self
            .followers
            .entry(account)
            .or_insert(Follower { conn, told: None });
        if follower.conn != conn {
            *follower = Follower { conn, told: None };
        }
    }

    /// Stops following for `account` if its follower connection is one `gone` names.
    pub(super) fn unfollow(&self, account: AccountId, gone: impl FnOnce(ConnId) -> bool) {
        self.followers.remove_if(&account, |_, f| gone(f.conn));
    }

    /// Cluster mode: `account`, seated in this node's game `game_id`, follows on another
    /// node's connection `conn`. Told of the game opening (`tell_owed`), it is pushed
    /// what its seat owes now, unless it has been already; asking `my_games`, it is
    /// answered that in the list.
    pub fn follow_here(&self, game_id: GameId, account: AccountId, conn: ConnId, tell_owed: bool) {
        self.follow_moves(account, conn);
        if !tell_owed {
            return;
        }
        let Some(seats) = self.games.get(&game_id).map(|e| e.seats) else {
            return;
        };
        let Some(owed) = self.owed_of(&game_id) else {
            return;
        };
        for o in &owed.owed {
            if *seats.get(o.seat) == account {
                self.push_your_move(account, game_id, owed.round, o);
            }
        }
    }

    /// Cluster mode: `account`'s follower, if it is a connection of this node (which
    /// tells the node running `account`'s game, `follow_here`).
    pub fn follower_here(&self, account: AccountId) -> Option<ConnId> {
        let conn = self.followers.get(&account)?.conn;
        self.is_local(conn).then_some(conn)
    }

    /// A game of this node has ended or moved: its players' followers on other nodes
    /// are forgotten unless they sit in another of this node's games (their node tells
    /// the node of their next game).
    pub(super) fn unfollow_remote(&self, game_id: GameId, seats: SeatPair<AccountId>) {
        for account in [seats.one, seats.two] {
            let other_here = self
                .seated
                .of(account)
                .iter()
                .any(|s| s.game_id != game_id && self.games.contains_key(&s.game_id));
            if !other_here {
                self.followers
                    .remove_if(&account, |_, f| !self.is_local(f.conn));
            }
        }
    }

    /// Whether `conn` is this node's (always, on a single node).
    fn is_local(&self, conn: ConnId) -> bool {
        self.peers.is_local(conn)
    }

    fn tell_your_move(&self, game_id: GameId, round: u32, newly: &[Owed]) {
        let Some(seats) = self.games.get(&game_id).map(|e| e.seats) else {
            return;
        };
        for owed in newly {
            self.push_your_move(*seats.get(owed.seat), game_id, round, owed);
        }
    }

    /// Pushes `your_move` for `owed` to `account`'s follower, unless it was its last push
    /// (a follower told of a game as it opens may race the game's own push).
    fn push_your_move(&self, account: AccountId, game_id: GameId, round: u32, owed: &Owed) {
        let conn = {
            let Some(mut follower) = self.followers.get_mut(&account) else {
                return;
            };
            let told = Some((game_id, round, owed.action));
            if follower.told == told {
                return;
            }
            follower.told = told;
            follower.conn
        };
        let frame = Bytes::from(wire::encode(&ServerMsg::YourMove {
            game_id,
            seat: owed.seat,
            round,
            action: owed.action,
            deadline: owed.deadline,
        }));
        // Nothing waits: a full queue loses a push whose news the game's events and
        // `my_games` also carry. Another node's connection is reached through Redis.
        let _ = self.bus.send(conn, frame);
    }

    /// What this node's live game `game_id` waits for now.
    pub fn owed_of(&self, game_id: &GameId) -> Option<OwedNow> {
        self.owed.get(game_id).map(|e| e.clone())
    }

    /// The open games `account` sits in, each with what it waits for: on this node, or in
    /// cluster mode on any node (one round trip to each game's node, at most
    /// `ASK_TIMEOUT`; a node that does not answer in time leaves its game out).
    pub async fn my_games(&self, account: AccountId) -> Vec<MyGame> {
        let mut games = Vec::new();
        for at in self.seats_of(account) {
            if self.games.contains_key(&at.game_id) {
                // This node's game; one that has ended owes nothing and is left out.
                games.extend(self.my_game_here(at));
                continue;
            }
            let follower = self.follower_here(account);
            let elsewhere = self.peers.owed_elsewhere(at.game_id, account, follower);
            if let Some((summary, owed)) = elsewhere.await {
                games.push(my_game(at.game_id, at.seat, &summary, owed));
            }
        }
        games
    }

    /// Seat `at`'s entry, if its game runs on this node.
    fn my_game_here(&self, at: SeatAt) -> Option<MyGame> {
        let summary = self.games.get(&at.game_id).map(|e| e.summary.clone())?;
        let owed = self.owed.get(&at.game_id).map(|e| e.clone())?;
        Some(my_game(at.game_id, at.seat, &summary, owed))
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

/// A connection that asked `my_games`, and the last `your_move` pushed to it (game,
/// round, action).
#[derive(Debug, Clone, Copy)]
pub(super) struct Follower {
    conn: ConnId,
    told: Option<(GameId, u32, OwedAction)>,
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
