//! `Db`'s reads for the HTTP API's pages, each on a reader thread's connection; a finished
//! game not found there is looked up again once the writer has committed what was queued.

use elementals_protocol::messages::GameId;

use super::{
    call, reader, Db, DbResult, LeaderRow, Page, PlayerGame, PlayerPage, Request, StoredGame,
};

impl Db {
    /// A page of the leaderboard, read on a reader's connection.
    pub async fn leaderboard(&self, page: Page) -> DbResult<Vec<LeaderRow>> {
        call(&self.reads, |reply| reader::Read::Leaderboard {
            page,
            reply,
        })
        .await
    }

    /// A player's standing and a page of their history, read on a reader's connection.
    pub async fn player_page(&self, name: String, page: Page) -> DbResult<Option<PlayerPage>> {
        call(&self.reads, |reply| reader::Read::PlayerPage {
            name,
            page,
            reply,
        })
        .await
    }

    /// The stored record of a finished game, as JSON, read on a reader's connection. An id
    /// that is not a game id is simply not found.
    ///
    /// A game's record reaches the writer just after its `game_over`, and a client may ask
    /// for it at once: an id not found is looked up again once the writer has committed
    /// what was queued before the question, so a record handed over before it is found.
    /// Only such misses wait on the writer, and they make it do nothing.
    pub async fn game_record(&self, game_id: String) -> DbResult<Option<serde_json::Value>> {
        // Stored ids are the canonical hyphenated lowercase form; accept any spelling of a UUID.
        let Ok(game_id) = game_id.parse::<GameId>() else {
            return Ok(None);
        };
        let read = || {
            call(&self.reads, |reply| reader::Read::GameRecord {
                game_id,
                reply,
            })
        };
        if let Some(record) = read().await? {
            return Ok(Some(record));
        }
        self.call(|reply| Request::Flush { reply }).await?;
        read().await
    }

    /// A page of a registered player's finished games, newest first, read on a reader's
    /// connection; `None` for an unknown name or a guest.
    pub async fn player_games(
        &self,
        name: String,
        page: Page,
    ) -> DbResult<Option<Vec<PlayerGame>>> {
        call(&self.reads, |reply| reader::Read::PlayerGames {
            name,
            page,
            reply,
        })
        .await
    }

    /// A finished game's stored record and rating changes, read on a reader's connection;
    /// a miss is looked up again once the writer has committed what was queued before it,
    /// as for [`Db::game_record`].
    pub async fn stored_game(&self, game_id: String) -> DbResult<Option<StoredGame>> {
        let Ok(game_id) = game_id.parse::<GameId>() else {
            return Ok(None);
        };
        let read = || {
            call(&self.reads, |reply| reader::Read::StoredGame {
                game_id,
                reply,
            })
        };
        if let Some(game) = read().await? {
            return Ok(Some(game));
        }
        self.call(|reply| Request::Flush { reply }).await?;
        read().await
    }
}
