// This player's open games and what each waits for, as the server's `my_games` answers:
// the "My games" badge and the tab title's count read it. Asked for after signing in (which
// also makes the server push `your_move` to this connection), and again on each
// `your_move`, a game's start and end, and this player's own commits and reveals; one
// request at a time, with a second one queued behind it if more come meanwhile.

export class MyGames {
  constructor(app) {
    this.app = app;
    this.games = [];
    this.asking = false;
    this.again = false;
  }

  /** The games in which this player's seat owes a commit or a reveal. */
  owing() {
    return this.games.filter((g) => g.owed.some((o) => o.seat === g.seat));
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
