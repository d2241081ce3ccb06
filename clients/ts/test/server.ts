// One real `elementals-server` for a test file: on 127.0.0.1 port 0 (the address it binds
// is read from its `serving` log line), with a fresh SQLite database in a temporary
// directory. `ELEMENTALS_SERVER_BIN` names a built binary; without it the repository's
// server is built with cargo. Importing this module puts every socket of the file's tests
// under the conformance hook (conformance.ts).

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import './conformance.js';

// build/test/server.js sits four levels below the repository's root.
const REPO = resolve(fileURLToPath(new URL('../../../..', import.meta.url)));
const START_TIMEOUT_MS = 60_000;

function serverBinary(): string {
  const named = process.env.ELEMENTALS_SERVER_BIN;
  if (named) return named;
  const built = spawnSync('cargo', ['build', '-p', 'elementals-server'], { cwd: REPO, stdio: ['ignore', 'inherit', 'inherit'] });
  if (built.status !== 0) throw new Error(`cargo build -p elementals-server failed (${built.status ?? built.signal})`);
  return join(resolve(REPO, process.env.CARGO_TARGET_DIR ?? 'target'), 'debug', 'elementals-server');
}

export interface TestServer {
  url: string;
  /** Stops the server's process (SIGSTOP) and resolves once it has stopped: its sockets
   * stay open and say nothing, as over a stalled network. */
  stall(): Promise<void>;
  /** Lets a stalled server run again (SIGCONT). */
  unstall(): void;
  stop(): Promise<void>;
}

/** The most correspondence games a test player may sit in: two, so that a third is refused. */
export const MAX_CORRESPONDENCE_GAMES = 2;

/** Starts a server; `messageRate` is the messages a second it allows a connection. */
export async function startServer(messageRate = 1000): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'elementals-ts-'));
  // Cheap password hashing, no cap on accounts from one address, a high message rate:
  // every test player connects from 127.0.0.1.
  const child = spawn(serverBinary(), [
    '--listen', '127.0.0.1:0', '--database', join(dir, 'test.db'), '--argon2-memory-kib', '1024',
    '--new-accounts-per-ip', '0', '--message-rate', String(messageRate),
    '--max-correspondence-games', String(MAX_CORRESPONDENCE_GAMES),
  ], {
    env: { ...process.env, NO_COLOR: '1', RUST_LOG: 'warn,elementals_server::server=info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((ok) => child.on('exit', () => ok()));
  const addr = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error('the server did not start in time')), START_TIMEOUT_MS);
    child.on('exit', (code, signal) => fail(new Error(`the server exited at start (${code ?? signal})`)));
    // Read the whole log, so that the pipe never fills.
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = /serving addr=(\S+)/.exec(line);
      if (match) {
        clearTimeout(timer);
        ok(match[1]);
      }
    });
  });
  return {
    url: `ws://${addr}/ws`,
    async stall() {
      child.kill('SIGSTOP');
      // The signal is only queued: until every thread has stopped, a frame may still be
      // answered. Linux shows the stop as state T in /proc.
      const stat = `/proc/${child.pid}/stat`;
      if (!existsSync(stat)) return;
      while (!/^\d+ \(.*\) T /.test(readFileSync(stat, 'utf8'))) await new Promise((ok) => setImmediate(ok));
    },
    unstall() { child.kill('SIGCONT'); },
    async stop() {
      child.kill('SIGCONT');
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
