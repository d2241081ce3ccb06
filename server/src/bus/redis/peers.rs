//! The cluster's bus as the registry's peers (`crate::peers`): the directory's mirror
//! of the other nodes' games, users and sleeping games, and the asks that reach them.

use std::time::Duration;

use elementals_protocol::messages::{GameId, LiveGame, SeatPair};
use futures::future::BoxFuture;

use super::{node_of, RedisBus};
use crate::bus::ConnId;
use crate::msg::OwedNow;
use crate::peers::{Asleep, Peers, SeatAt};
use crate::record::AccountId;

impl Peers for RedisBus {
    fn game_opened(&self, game: GameId, seats: SeatPair<AccountId>, summary: LiveGame) {
        self.directory.game_opened(game, seats, summary);
    }

    fn summary_changed(&self, summary: LiveGame) {
        self.directory.summary_changed(summary);
    }

    fn game_ended(&self, game: GameId) {
        self.directory.game_ended(game);
    }

    fn game_moved(&self, game: GameId) {
        self.directory.game_moved(game);
    }

    fn user_online(&self, account: AccountId, name: &str, conn: ConnId) {
        self.directory.user_online(account, name, conn);
    }

    fn user_offline(&self, account: AccountId, conn: ConnId) {
        self.directory.user_offline(account, conn);
    }

    fn told(&self) -> BoxFuture<'static, ()> {
        Box::pin(self.link.written())
    }

    fn node_of(&self, game: GameId) -> Option<u16> {
        self.directory.node_of(game)
    }

    fn seats_of(&self, account: AccountId) -> Vec<SeatAt> {
        self.directory.seats_of(account)
    }

    fn remote_games(&self) -> Vec<LiveGame> {
        self.directory.remote_games()
    }

    fn remote_online(&self) -> usize {
        self.directory.remote_online()
    }

    /// Node 0 is this process's own (`NODE_SHIFT`).
    fn is_local(&self, conn: ConnId) -> bool {
        let node = node_of(conn);
        node == 0 || node == self.directory.node
    }

    fn owed_elsewhere(
        &self,
        game: GameId,
        account: AccountId,
        follower: Option<ConnId>,
    ) -> BoxFuture<'_, Option<(LiveGame, OwedNow)>> {
        Box::pin(async move {
            let (node, summary) = self.directory.entry_of(game)?;
            // Asked before the answer: `your_move` from that node from now on.
            if let Some(conn) = follower {
                self.follow(node, game, account, conn, false);
            }
            let owed = self.ask_owed(node, game).await?;
            Some((summary, owed))
        })
    }

    fn find_online<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Option<(AccountId, ConnId, String)>> {
        Box::pin(RedisBus::find_online(self, name))
    }

    fn game_slept(&self, game: GameId, seats: SeatPair<AccountId>, summary: Option<LiveGame>) {
        self.directory.game_slept(game, seats, summary);
    }

    fn load_dormant(&self, game: GameId, seats: SeatPair<AccountId>, summary: Option<LiveGame>) {
        self.directory.load_dormant(game, seats, summary);
    }

    fn dormant(&self, game: GameId) -> Option<Asleep> {
        self.directory.dormant(game)
    }

    fn dormant_games(&self) -> Vec<LiveGame> {
        self.directory.dormant_games()
    }

    fn forget_dormant(&self, game: GameId, number: u64) {
        self.directory.forget_dormant(game, number);
    }

    fn asleep_accounts(&self) -> Vec<AccountId> {
        self.directory.asleep_accounts()
    }

    fn games_opened(&self) -> tokio::sync::watch::Receiver<u64> {
        self.directory.games_opened()
    }

    fn asleep_count(&self) -> usize {
        self.directory.asleep_count()
    }

    fn rejoins(&self) -> Option<u64> {
        Some(self.directory.rejoins())
    }

    fn dormant_mark(&self) -> u64 {
        self.directory.dormant_mark()
    }

    fn sleepers_read(&self, rows: Vec<(GameId, SeatPair<AccountId>, Option<LiveGame>)>, mark: u64) {
        self.directory.sleepers_read(rows, mark);
    }

    fn render_metrics(&self) -> String {
        self.directory.render_metrics()
    }

    fn reaches_peers(&self) -> bool {
        self.directory.reaches_redis()
    }

    fn cut_off_for(&self) -> Option<Duration> {
        self.directory.cut_off_for()
    }
}
