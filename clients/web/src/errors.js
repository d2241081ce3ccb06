// The server's error codes (PROTOCOL.md section 10) in plain words for people. The
// server's own `message` is for developers and may change; codes not listed here show it.

const PLAIN = {
  bad_credentials: 'That name and password do not match any account.',
  name_taken: 'That name is taken. If it is yours, choose "Log in".',
  invalid_name: 'A name is 3 to 20 letters, digits, _ or -, and may not start with "guest-".',
  invalid_password: 'A password is 8 to 128 characters long.',
  rate_limited: 'Too many tries just now. Wait a minute, then try again.',
  invalid_token: 'Your sign-in has expired. Please log in again.',
  not_authenticated: 'Sign in first.',
  guest_not_allowed: 'Guests play casual games only: create an account to play rated games.',
  claim_not_allowed: 'Not yet: the win can be claimed once your opponent has been away, while it is their move, for the whole waiting time.',
  already_queued: 'You are already waiting for a game.',
  not_queued: 'You are not waiting for a game.',
  already_in_game: 'You are in a live game already: finish it first. (Correspondence games may go on beside one.)',
  too_many_games: 'You are in as many correspondence games as allowed (50): finish one first.',
  unknown_player: 'No player of that name is online.',
  own_seek: 'That is your own.',
  unknown_seek: 'That seek is gone: someone took it, or its owner left.',
  unknown_challenge: 'That challenge is gone.',
  too_many_requests: 'Too many at once: cancel some of your open seeks or challenges first, or, to play the computer, try again in a moment.',
  unknown_strength: 'The computer does not play at that strength.',
  invalid_variant: 'Those numbers do not make a game: see the limits beside them.',
  invalid_time_control: 'That time control is outside what the server allows.',
  no_draw_offer: 'There is no draw offer to decline any more.',
  no_rematch: 'A rematch cannot be offered now: your opponent may have left.',
  game_over: 'The game has ended.',
  shutting_down: 'The server is restarting. Try again in a moment.',
  internal: 'Something went wrong on the server; nothing was changed. Try again.',
  closed: 'Not connected. Wait a moment for the connection to come back.',
  timeout: 'The server did not answer. Try again.',
};

/** What to tell a person about a failed request (a ProtocolError or any Error). */
export function plainMessage(e) {
  return PLAIN[e?.code] ?? e?.message ?? String(e);
}
