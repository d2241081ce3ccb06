//! Cluster mode: a game whose lease this node has lost stops as soon as its alarm sounds
//! (`alarms.rs`), not at its next step: its players hear `game_moved` and are
//! closed 1012, and the registry forgets it. Other games play on.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use elementals_protocol::messages::ServerMsg;

use super::{decode, Harness, Inbox, TC};
use crate::alarms::LeaseAlarms;
use crate::msg::close;

impl Inbox {
    /// Every frame up to the connection's close, and the close, waiting for it.
    async fn until_close(&mut self) -> (Vec<ServerMsg>, (u16, &'static str)) {
        let mut msgs: Vec<ServerMsg> = self.pending.drain(..).map(|b| decode(&b)).collect();
        loop {
            let out = self.rx.recv().await.expect("the outbox is open");
            msgs.extend(out.frames().iter().map(decode));
            if let Some(close) = out.close() {
                return (msgs, close);
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_game_whose_lease_is_lost_stops_at_once_and_its_players_hear_it_moved() {
    let mut h = Harness::new().await;
    let alarms = Arc::new(LeaseAlarms::default());
    h.services.lease_alarms = Some(alarms.clone());
    let mut a = h.start(0, TC).await;
    let b = h.start(2, TC).await;
    a.play(1, 1, 2).await;
    a.one.drain();
    a.two.drain();
    let game_id = a.handle.game_id();
    let logged = h.logged_steps(&a);

    assert_eq!(alarms.sound(&[game_id]), 1);
    // Not a moment of the game's clocks passes: without the alarm the game would wait on
    // its players for a minute.
    for player in [&mut a.one, &mut a.two] {
        let (msgs, (code, _)) =
            tokio::time::timeout(Duration::from_millis(1), player.inbox.until_close())
                .await
                .expect("the game stops at once");
        assert!(
            msgs.iter()
                .any(|m| matches!(m, ServerMsg::Notice { code, .. } if code == "game_moved")),
            "told the game moved: {msgs:?}"
        );
        assert_eq!(code, close::RESTART);
    }
    assert!(h.registry().game(&game_id).is_none());
    assert_eq!(h.metrics().games_moved.load(Relaxed), 1);

    // The other game plays on, its alarm not sounded; the stopped one logged nothing more.
    b.play(1, 2, 1).await;
    assert_eq!(h.logged_steps(&a), logged);
}
