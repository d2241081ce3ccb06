// The application: one connection, the signed-in account, the lobby state, the games this
// tab plays or watches, and the hash router that picks a view. Views read this state and
// call its actions; every server push ends in `refresh()`, which updates the current view.

import { Alerts } from './alerts.js';
import { Connection, ProtocolError, wsUrl } from './connection.js';
import { applyEvent, canPick, fromSnapshot } from './game.js';
import { h, replace } from './dom.js';
import { plainMessage } from './errors.js';
import { buildShell, renderShell } from './shell.js';
import { play } from './play.js';
import { fetchRecord } from './record.js';
import { MyGames } from './my-games.js';
import { onPush } from './pushes.js';
import { parseRoute, VIEWS } from './routes.js';

const TOKEN_KEY = 'elementals.token';

function token() {
  return localStorage.getItem(TOKEN_KEY);
}

export class App {
  constructor(root) {
    this.root = root;
    this.conn = null;
    this.status = 'connecting';
    this.account = null;
    this.games = new Map();
    this.myGameId = null;
    this.watching = new Set();
    this.queue = null;
    this.mySeeks = new Map();
    this.challengesIn = new Map();
    this.challengesOut = new Map();
    this.rematchOffers = new Set();
    // Finished games whose rematch offer from this player the opponent declined.
    this.rematchDeclined = new Set();
    // Events of a game whose snapshot is still on its way (game id -> events), replayed
    // once it lands: a seat starts receiving events the moment it attaches.
    this.early = new Map();
    this.retries = 0;
    // Who waits for the next connection to be up (`online()`).
    this.waiting = [];
    // Connections opened so far (the tests read it).
    this.opened = 0;
    // Set while reconnecting after the server closed a connection that had not signed in
    // (4001 after its sign-in time): nothing was lost, so nothing is said.
    this.quietReconnect = false;
    // What is typed into views that a reconnection rebuilds (the lobby's opponent name).
    this.drafts = {};
    this.view = null;
    this.route = null;
    this.alerts = new Alerts();
    this.myGames = new MyGames(this);
    this.buildShell();
  }

  start() {
    play.prune();
    window.addEventListener('hashchange', () => this.navigate());
    // Back on the network: try at once rather than when the backoff next fires.
    window.addEventListener('online', () => {
      if (this.status === 'reconnecting') this.connect();
    });
    this.navigate();
    this.connect();
  }

  // ---- shell ----

  buildShell() {
    buildShell(this);
  }

  renderShell() {
    renderShell(this);
  }

  toast(text, kind = 'info') {
    if (kind === 'error') {
      console.error(text);
      // The latest mistake is the one to read: an earlier error is not left beside it.
      for (const old of this.toasts.querySelectorAll('.toast.error')) old.remove();
    }
    const el = h('div', { class: `toast ${kind}` }, text);
    this.toasts.append(el);
    setTimeout(() => el.remove(), 6000);
  }

  announce(text) {
    this.announcer.textContent = text;
  }

  // ---- routing ----

  parseRoute() {
    return parseRoute(location.hash);
  }

  go(hash) {
    if (location.hash === hash) this.navigate();
    else location.hash = hash;
  }

  navigate() {
    let route = this.parseRoute();
    // Only playing needs an account: anyone may watch a game or read the pages. Someone
    // signed out who opens the lobby gets the welcome page: play at once, or watch.
    const needsAccount = route.name === 'lobby';
    if (needsAccount && !this.account && this.status !== 'connecting') route = { name: 'welcome' };
    const same = this.route && JSON.stringify(this.route) === JSON.stringify(route);
    if (same && this.view) return this.refresh();
    this.view?.destroy?.();
    this.route = route;
    // Before the first connection has tried to resume, pages that need an account (or, for
    // a game, to know whether this is a player or a spectator) wait.
    const needsWait = (needsAccount || route.name === 'game') && !this.account && this.status === 'connecting';
    this.view = needsWait ? { el: h('p', { class: 'loading' }, 'Connecting…') } : VIEWS[route.name](this, route);
    replace(this.main, this.view.el);
    this.renderShell();
  }

  /** State changed: update the shell and the current view. */
  refresh() {
    this.renderShell();
    this.view?.update?.();
    this.renderTitle();
  }

  /** The tab says when this player must pick, and how their game ended while it is shown. */
  renderTitle() {
    const game = this.myGameId && this.games.get(this.myGameId);
    let text = null;
    if (game?.seat && canPick(game) && !play.kept(game)) text = 'Your move';
    else if (game?.seat && game.phase === 'over' && this.route?.id === game.id && game.result) {
      text = !game.result.winner ? 'Game over' : game.result.winner === game.seat ? 'You won' : 'You lost';
    }
    this.alerts.title(text, this.myGames.owing().length);
  }

  // ---- connection ----

  async connect() {
    clearTimeout(this.retryTimer);
    this.conn?.close();
    // Until this socket is open nothing can be sent (a retry keeps saying "Reconnecting").
    if (this.status !== 'reconnecting' && this.status !== 'connecting') {
      this.status = 'connecting';
      this.refresh();
    }
    const conn = new Connection(wsUrl(location));
    this.conn = conn;
    conn.addEventListener('push', (e) => this.conn === conn && this.onPush(e.detail));
    conn.addEventListener('close', (e) => this.conn === conn && this.onClose(e.detail));
    conn.addEventListener('late', (e) => this.conn === conn && this.onLate(e.detail));
    try {
      await conn.open();
    } catch {
      return; // onClose schedules the retry.
    }
    this.retries = 0;
    this.opened++;
    const quiet = this.quietReconnect;
    this.quietReconnect = false;
    // A new connection is signed in as nobody and watches nothing until it says so.
    this.account = null;
    this.myGames.clear();
    // Live games are reopened on this connection (a snapshot after resume, or `sync`), so
    // a game that ended meanwhile is not shown as still running.
    // After a quiet reconnect a spectator's game stays on screen while it is watched again.
    const rewatch = quiet && !token() && this.route?.name === 'game' ? this.route.id : null;
    for (const [id, game] of this.games) if (game.phase !== 'over' && id !== rewatch) this.games.delete(id);
    this.watching.clear();
    // The server dropped this player from pools, seeks and challenges with the old socket.
    this.forgetLobby();
    const saved = token();
    if (saved) {
      try {
        this.signedIn(await conn.request({ type: 'resume', token: saved }));
      } catch (e) {
        if (e.code === 'invalid_token') localStorage.removeItem(TOKEN_KEY);
      }
    }
    this.status = 'online';
    for (const ready of this.waiting.splice(0)) ready();
    if (rewatch) {
      this.refresh();
      this.watch(rewatch).catch(() => {
        // It ended meanwhile: the view opens it afresh (and finds its record).
        this.games.delete(rewatch);
        this.route = null;
        this.navigate();
      });
      return;
    }
    if (this.account && this.parseRoute().name === 'login') {
      this.route = null;
      this.go('#/lobby');
    } else if (!this.account && (this.route?.name === 'login' || (quiet && (this.route?.name === 'watch' || this.route?.name === 'welcome'))) && this.view) {
      // The sign-in form needs nothing from the connection: keep what was typed into it.
      // The live list refreshes itself once the connection is up.
      this.refresh();
    } else {
      // Rebuild the view: it reopens (syncs or watches) its game on this connection.
      this.route = null;
      this.navigate();
    }
  }

  onClose({ code, notice }) {
    this.conn = null;
    if (code === 4001 && !this.account) {
      // Closed for not signing in (a spectator, or a sign-in form left open): the server
      // keeps nothing for such a connection, so open a new one at once, without a word.
      this.quietReconnect = true;
      this.connect();
      return;
    }
    if (notice?.code === 'superseded') {
      this.status = 'superseded';
    } else {
      this.status = 'reconnecting';
      const delay = Math.min(10_000, 500 * 2 ** this.retries++);
      this.retryTimer = setTimeout(() => this.connect(), delay);
    }
    this.refresh();
  }

  /**
   * The answer to a request that had timed out came after all: what it did is read back
   * from the server (a game's snapshot), never guessed. A commit's pick was kept meanwhile
   * (play.js), so a commitment that went in is revealed.
   */
  onLate({ request }) {
    const game = request.game_id && this.games.get(request.game_id);
    if (game) this.sync(game);
  }

  /** Resolves once a connection is up (at once if one is). */
  online() {
    if (this.status === 'online' && this.conn?.isOpen) return Promise.resolve();
    return new Promise((ready) => this.waiting.push(ready));
  }

  /** A request on the current connection. */
  request(msg) {
    if (!this.conn) return Promise.reject(new ProtocolError('closed', 'not connected'));
    return this.conn.request(msg);
  }

  /**
   * A request whose failure is shown to the player; resolves to the reply or null. One
   * about a game that timed out may still have been done: the game is read back.
   */
  async act(msg) {
    try {
      return await this.request(msg);
    } catch (e) {
      this.toast(plainMessage(e), 'error');
      const game = e.code === 'timeout' && msg.game_id && this.games.get(msg.game_id);
      if (game) this.sync(game);
      return null;
    } finally {
      this.refresh();
    }
  }

  // ---- identity ----

  signedIn(reply) {
    this.account = reply.account;
    this.myGames.refresh();
    localStorage.setItem(TOKEN_KEY, reply.token);
    // The sign-in form opens on "Log in" for someone who has an account here.
    if (!reply.account.guest) localStorage.setItem('elementals.has-account', '1');
  }

  async authenticate(msg) {
    let reply;
    try {
      reply = await this.request(msg);
    } catch (e) {
      // Sent as the server closed the connection for not signing in in time (4001): it
      // was not read, and the next connection, opened at once, takes it.
      if (e.code !== 'closed' || !this.quietReconnect) throw e;
      await this.online();
      reply = await this.request(msg);
    }
    this.signedIn(reply);
    const then = this.route?.then;
    this.route = null;
    this.go(then && then !== '#/login' ? then : '#/lobby');
  }

  async logout() {
    try {
      await this.request({ type: 'logout' });
    } catch {
      // Signed out locally all the same.
    }
    localStorage.removeItem(TOKEN_KEY);
    this.account = null;
    this.myGames.clear();
    this.myGameId = null;
    this.forgetLobby();
    // The server forgets a logged-out connection's state; start clean.
    this.connect();
    this.go('#/login');
  }

  /** Accept, decline or cancel a challenge (`type` is the request), from any page. */
  async answerChallenge(c, type) {
    this.challengesIn.delete(c.challenge_id);
    this.challengesOut.delete(c.challenge_id);
    await this.act({ type, challenge_id: c.challenge_id });
  }

  /** Forget this player's place in the pools, seeks and challenges (the server has). */
  forgetLobby() {
    this.queue = null;
    this.mySeeks.clear();
    this.challengesIn.clear();
    this.challengesOut.clear();
  }

  // ---- games ----

  /**
   * Open a live game: this player's own (a `sync` answers with the seat), or else watch it.
   * Resolves when its snapshot is in.
   */
  async openGame(id) {
    if (this.games.has(id)) return;
    if (!this.account) return this.watch(id);
    try {
      const reply = await this.request({ type: 'sync', game_id: id });
      this.installSnapshot(reply.snapshot, reply.seat ?? null);
    } catch (e) {
      if (e.code !== 'not_seated') throw e;
      return this.watch(id);
    }
    this.refresh();
  }

  /**
   * Show a game that is not live from its stored record (see record.js). Resolves to
   * false if there is none.
   */
  async loadRecord(id, tries = 1) {
    const game = await fetchRecord(id, this.account?.name, tries);
    if (!game) return false;
    if (!this.games.has(id)) this.games.set(id, game);
    this.refresh();
    return true;
  }

  /** Watch a live game (no account needed). Resolves when its snapshot is in. */
  async watch(id) {
    const reply = await this.request({ type: 'watch', game_id: id });
    this.watching.add(id);
    this.installSnapshot(reply.snapshot, null);
    this.refresh();
  }

  unwatch(id) {
    if (!this.watching.delete(id)) return;
    this.games.delete(id);
    this.request({ type: 'unwatch', game_id: id }).catch(() => {});
  }

  installSnapshot(snapshot, seat) {
    const now = performance.now();
    const game = fromSnapshot(snapshot, seat, now);
    this.games.set(game.id, game);
    for (const msg of this.early.get(game.id) ?? []) applyEvent(game, msg, now);
    this.early.delete(game.id);
    if (seat) {
      this.myGameId = game.id;
      play.restore(this, game);
      play.reveal(this, game);
    }
    return game;
  }

  /** Ask for a fresh snapshot after missed events. */
  async sync(game) {
    try {
      const reply = await this.request({ type: 'sync', game_id: game.id });
      this.installSnapshot(reply.snapshot, reply.seat ?? null);
      this.refresh();
    } catch (e) {
      console.warn('sync failed', e);
    }
  }

  onPush(msg) {
    onPush(this, msg);
  }
}
