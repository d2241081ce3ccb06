//! placeholder, replaced by the game actor implementation
use super::{GameHandle, GameServices, GameSetup};
pub(super) fn spawn(_setup: GameSetup, _services: GameServices) -> GameHandle {
    todo!()
}
