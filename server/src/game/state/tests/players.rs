//! What players do besides moving: resigning, draws offered and agreed, wins claimed
//! against an absent opponent, and who is rated.

use super::*;

#[test]
fn resigning_hands_the_win_to_the_opponent() {
    let mut game = Game::new();
    game.act(Seat::Two, SeatAction::Resign, SEC).unwrap();
    assert_eq!(
        game.result(),
        Some((Some(Seat::One), EndReason::Resignation))
    );
    assert_eq!(
        game.act(Seat::One, SeatAction::Resign, SEC),
        Err(ErrorCode::GameOver)
    );
}

#[test]
fn draws_are_offered_declined_cleared_and_agreed() {
    let mut game = Game::new();
    assert_eq!(
        game.act(Seat::One, SeatAction::DeclineDraw, SEC),
        Err(ErrorCode::NoDrawOffer)
    );
    game.act(Seat::One, SeatAction::OfferDraw, SEC).unwrap();
    // The offerer cannot decline its own offer; repeating it is a no-op.
    assert_eq!(
        game.act(Seat::One, SeatAction::DeclineDraw, SEC),
        Err(ErrorCode::NoDrawOffer)
    );
    game.act(Seat::One, SeatAction::OfferDraw, SEC).unwrap();
    game.act(Seat::Two, SeatAction::DeclineDraw, SEC).unwrap();
    game.act(Seat::Two, SeatAction::OfferDraw, SEC).unwrap();
    game.play(1, 1, 1, 2 * SEC);
    assert_eq!(game.state.snapshot(game.at(2 * SEC), 0).draw_offer, None);
    game.act(Seat::Two, SeatAction::OfferDraw, 3 * SEC).unwrap();
    game.act(Seat::One, SeatAction::OfferDraw, 3 * SEC).unwrap();
    assert_eq!(game.result(), Some((None, EndReason::DrawAgreed)));
    let kinds: Vec<&str> = game
        .events
        .iter()
        .filter_map(|e| match e {
            ServerMsg::DrawOffered { .. } => Some("offered"),
            ServerMsg::DrawDeclined { .. } => Some("declined"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["offered", "declined", "offered", "offered"]);
}

#[test]
fn a_win_is_claimable_only_after_the_grace_period() {
    let mut game = Game::new();
    let mut out = Vec::new();
    game.state.attach(Seat::One, game.at(SEC), &mut out);
    game.state.attach(Seat::Two, game.at(SEC), &mut out);
    game.play(1, 1, 1, 2 * SEC);
    assert_eq!(
        game.act(Seat::One, SeatAction::ClaimWin, 3 * SEC),
        Err(ErrorCode::ClaimNotAllowed)
    );
    game.state.detach(Seat::Two, game.at(10 * SEC), &mut out);
    let away = 10 * SEC + TIMING.grace;
    assert_eq!(
        game.act(Seat::One, SeatAction::ClaimWin, away - MS),
        Err(ErrorCode::ClaimNotAllowed)
    );
    game.act(Seat::One, SeatAction::ClaimWin, away).unwrap();
    assert_eq!(game.result(), Some((Some(Seat::One), EndReason::Abandoned)));
    let presence: Vec<bool> = out
        .iter()
        .filter_map(|e| match e {
            ServerMsg::Presence { connected, .. } => Some(*connected),
            _ => None,
        })
        .collect();
    assert_eq!(presence, [true, true, false]);
}

#[test]
fn a_player_away_while_only_the_opponent_owes_a_move_is_not_blamed() {
    let mut game = Game::new();
    let mut out = Vec::new();
    game.state.attach(Seat::One, game.at(SEC), &mut out);
    game.state.attach(Seat::Two, game.at(SEC), &mut out);
    game.play(1, 1, 1, 2 * SEC);
    // Two commits round 2 and leaves; the game now waits for one, not for two.
    game.commit(Seat::Two, 2, 3, 3 * SEC).unwrap();
    game.state.detach(Seat::Two, game.at(4 * SEC), &mut out);
    let long_after = 4 * SEC + TIMING.grace + SEC;
    assert_eq!(
        game.act(Seat::One, SeatAction::ClaimWin, long_after),
        Err(ErrorCode::ClaimNotAllowed)
    );
    // Once two owes a move (its reveal), its absence counts from then: here the reveal
    // window, shorter than the grace period, decides first.
    game.commit(Seat::One, 2, 1, long_after).unwrap();
    game.reveal(Seat::One, 2, 1, long_after + SEC).unwrap();
    game.tick(long_after + Duration::from_millis(TC.reveal_ms));
    assert_eq!(game.result(), Some((Some(Seat::One), EndReason::NoReveal)));
}

#[test]
fn a_game_with_a_guest_is_not_rated() {
    let mut game = Game::with(setup(true));
    game.act(Seat::Two, SeatAction::Resign, SEC).unwrap();
    assert!(!game.state.record().unwrap().changes_ratings());
    assert!(matches!(
        game.events.last(),
        Some(ServerMsg::GameOver { rated: false, .. })
    ));
}
