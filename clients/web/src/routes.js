// The hash routes (`#/game/ID`, `#/player/NAME`, …) and the view each one shows.

import { authView } from './views/auth.js';
import { lobbyView } from './views/lobby.js';
import { gameView } from './views/game-view.js';
import { watchView } from './views/watch.js';
import { leaderboardView } from './views/leaderboard.js';
import { playerView } from './views/player.js';
import { replayView } from './views/replay.js';
import { howView } from './views/how.js';
import { myGamesView } from './views/my-games.js';
import { welcomeView } from './views/welcome.js';

/** The route `hash` names; anything unknown is the lobby. */
export function parseRoute(hash) {
  const parts = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  switch (parts[0]) {
    case 'login': return { name: 'login' };
    case 'game': return { name: 'game', id: parts[1] };
    case 'replay': return { name: 'replay', id: parts[1] };
    case 'watch': return { name: 'watch' };
    case 'games': return { name: 'games' };
    case 'leaderboard': return { name: 'leaderboard' };
    case 'player': return { name: 'player', player: parts[1] };
    case 'how': return { name: 'how' };
    default: return { name: 'lobby' };
  }
}

/** Each route's view: a function of the app and the route, answering `{ el, update?, destroy? }`. */
export const VIEWS = {
  login: authView, lobby: lobbyView, game: gameView, watch: watchView,
  leaderboard: leaderboardView, player: playerView, how: howView, replay: replayView,
  games: myGamesView, welcome: welcomeView,
};
