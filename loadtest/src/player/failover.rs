//! What a player does when a node of the cluster dies under it (`--kill-node`), as
//! PROTOCOL.md ("Several servers") asks of clients: its connection dropped, it reconnects
//! to the next node and resumes (`sign_in.rs`: again a second later while the game is
//! not yet claimed); its game gone quiet on another node, or a move refused
//! `unknown_game` (the game's node gone), it resumes to find it; a move refused otherwise
//! (the round voided by the takeover), it asks for the game again (`sync`) a second later.

use super::*;

/// How often a refused move's game is asked for again, and how long before it is given
/// up.
pub(super) const RESYNC_EVERY: Duration = Duration::from_secs(1);
pub(super) const GAME_BACK_WITHIN: Duration = Duration::from_secs(30);

/// A seated game with no event for this long (or twice the think time and half this,
/// whichever is longer) has likely lost its node: the player resumes to find it.
pub(super) const QUIET: Duration = Duration::from_secs(5);

impl Player {
    /// A request refused: a move or `sync` of the seated game refused `unknown_game` means
    /// its node is gone, and the player resumes (a `sync` would show it the game, but not
    /// seat it there again); refused otherwise, the game is asked for again in a second
    /// (for up to `GAME_BACK_WITHIN`). A `join_pool` refused `already_queued`
    /// (the player's pool entry is still the dead node's) is tried again a second later;
    /// one refused `already_in_game` (that entry was paired, and its `game_start` went to
    /// the dead node) means a seat this player never heard of: it resumes to hear it.
    pub(super) fn after_refusal(
        &mut self,
        what: Pending,
        code: ErrorCode,
    ) -> Result<(), ConnError> {
        let now = Instant::now();
        match (what, code) {
            (Pending::Join, ErrorCode::AlreadyInGame) => {
                // At most once a second: until the game is claimed the resume shows no
                // seat, and the next join is refused the same way.
                self.join_after = Some(now + RESYNC_EVERY);
                return Err(ConnError::Reseat);
            }
            (Pending::Join, _) => self.join_after = Some(now + RESYNC_EVERY),
            (Pending::Commit(_) | Pending::Reveal | Pending::Sync, ErrorCode::UnknownGame)
                if self.game.is_some() =>
            {
                return Err(ConnError::Reseat)
            }
            (Pending::Commit(_) | Pending::Reveal | Pending::Sync, _) => {
                let Some(game) = self.game.as_mut() else {
                    return Ok(());
                };
                if game
                    .resyncing_since
                    .is_some_and(|since| now.duration_since(since) > GAME_BACK_WITHIN)
                {
                    self.ctx.stats.error("failover: game not back within 30 s");
                    self.leave_game();
                } else {
                    game.resync_at = Some(now + RESYNC_EVERY);
                }
            }
            _ => {}
        }
        Ok(())
    }
}
