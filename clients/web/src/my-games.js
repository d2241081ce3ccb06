// This player's open games and what each waits for, as the server's `my_games` answers:
// the "My games" badge and the tab title's count read it. Asked for after signing in (which
// also makes the server push `your_move` to this connection), and again on each
// `your_move`, a game's start and end, and this player's own commits and reveals; one
// request at a time, with a second one queued behind it if more come meanwhile.

/** Whether this player's seat owes a commit or a reveal in `g`. */
export function owes(g) {
  return g.owed.some((o) => o.seat === g.seat);
}

/** The deadline that matters to this player in `g`: its own owed action's, else the opponent's. */
export function nextDeadline(g) {
  const o = g.owed.find((x) => x.seat === g.seat) ?? g.owed[0];
  return o?.deadline ?? null;
}

/** The hub's order: the games owing this player's move first, then each by its nearest deadline (held clocks last). */
export function hubOrder(games) {
  const key = (g) => nextDeadline(g) ?? Infinity;
  return [...games].sort((a, b) => Number(owes(b)) - Number(owes(a)) || key(a) - key(b));
}

export class MyGames {
  constructor(app) {
    this.app = app;
    this.games = [];
    this.asking = false;
    this.again = false;
  }

  /** The games in which this player's seat owes a commit or a reveal. */
  owing() {
    return this.games.filter(owes);
  }

  clear() {
    this.games = [];
  }

  async refresh() {
    if (this.asking) {
      this.again = true;
      return;
    }
    this.asking = true;
    try {
      do {
        this.again = false;
        if (!this.app.account || !this.app.conn?.isOpen) {
          this.games = [];
          break;
        }
        try {
          this.games = (await this.app.request({ type: 'my_games' })).games;
        } catch {
          // The connection went: the next one asks again once signed in.
          break;
        }
      } while (this.again);
    } finally {
      this.asking = false;
    }
    this.app.refresh();
  }
}
