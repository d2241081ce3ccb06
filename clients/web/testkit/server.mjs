// Starts a real elementals-server for the browser tests: built with cargo, on a free
// loopback port, with a fresh database in a temporary directory.

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, createWriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { distProxy } from './dist-proxy.mjs';

export const REPO = resolve(fileURLToPath(new URL('../../..', import.meta.url)));

/** `cargo build -p elementals-server` (which also builds and embeds the web client). */
export function buildServer() {
  const cargo = process.env.CARGO ?? 'cargo';
  const built = spawnSync(cargo, ['build', '-p', 'elementals-server'], { cwd: REPO, stdio: ['ignore', 'inherit', 'inherit'] });
  if (built.status !== 0) throw new Error(`cargo build -p elementals-server failed (${built.status ?? built.signal})`);
  const targetDir = process.env.CARGO_TARGET_DIR ? resolve(REPO, process.env.CARGO_TARGET_DIR) : join(REPO, 'target');
  return join(targetDir, 'debug', 'elementals-server');
}

/** A port that was free a moment ago: bind port 0 on loopback and let it go. */
export function freePort() {
  return new Promise((ok, fail) => {
    const probe = createServer();
    probe.unref();
    probe.on('error', fail);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => ok(port));
    });
  });
}

/**
 * Start the server (ELEMENTALS_SERVER_BIN names a prebuilt binary; else it is built);
 * resolves once GET /healthz answers. `stop()` ends it and removes its
 * database. Its output goes to `logFile` (RUST_LOG defaults to debug for our crates).
 */
export async function startServer({ binary, extraArgs = [], logFile } = {}) {
  const bin = binary ?? process.env.ELEMENTALS_SERVER_BIN ?? buildServer();
  const dir = mkdtempSync(join(tmpdir(), 'elementals-web-test-'));
  const port = await freePort();
  const log = logFile ?? join(dir, 'server.log');
  const out = createWriteStream(log);
  const child = spawn(
    bin,
    // Every test person comes from 127.0.0.1: no cap on the accounts one address creates.
    ['--listen', `127.0.0.1:${port}`, '--database', join(dir, 'test.db'), '--argon2-memory-kib', '1024',
      '--new-accounts-per-ip', '0', ...extraArgs],
    {
      cwd: dir,
      env: { ...process.env, NO_COLOR: '1', RUST_LOG: process.env.RUST_LOG ?? 'info,elementals_server=debug' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout.pipe(out);
  child.stderr.pipe(out);
  let exited = null;
  const exit = new Promise((ok) => child.on('exit', (code, signal) => {
    exited = { code, signal };
    ok(exited);
  }));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited) throw new Error(`the server exited at start (${JSON.stringify(exited)}); log: ${log}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the server did not answer /healthz within 30 s; log: ${log}`);
    }
    await new Promise((ok) => setTimeout(ok, 100));
  }
  // ELEMENTALS_WEB_DIST: the pages get the client from that directory (see dist-proxy.mjs).
  const proxy = process.env.ELEMENTALS_WEB_DIST ? await distProxy(process.env.ELEMENTALS_WEB_DIST, url) : null;
  return {
    url: proxy?.url ?? url,
    port,
    log,
    async stop({ keep = false } = {}) {
      await proxy?.close();
      if (!exited) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exit;
        clearTimeout(timer);
      }
      out.end();
      if (!keep) rmSync(dir, { recursive: true, force: true });
    },
  };
}
