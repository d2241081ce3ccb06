// A loopback front for a running server that serves the client from a directory written by
// `node build.mjs DIR` and passes everything else (the API, the WebSocket) through, so that
// a change to the client can be tried in the browser tests without rebuilding the server.
// The tests use it when ELEMENTALS_WEB_DIST names such a directory.

import { readFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';

const TYPES = { 'index.html': 'text/html; charset=utf-8', 'app.js': 'text/javascript', 'app.css': 'text/css' };

/** Listens on a free loopback port; resolves to { url, close }. */
export function distProxy(dir, target) {
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    const file = path === '/' ? 'index.html' : path.slice(1);
    if (TYPES[file]) {
      const cache = file === 'index.html' ? 'no-cache' : 'public, max-age=31536000, immutable';
      res.writeHead(200, { 'content-type': TYPES[file], 'cache-control': cache });
      res.end(readFileSync(join(dir, file)));
      return;
    }
    const forward = request(
      { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  // The WebSocket: replay the upgrade request upstream, then join the two sockets.
  server.on('upgrade', (req, socket, head) => {
    const up = connect(Number(upstream.port), upstream.hostname, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      up.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    const end = () => {
      up.destroy();
      socket.destroy();
    };
    up.on('error', end);
    socket.on('error', end);
    up.on('close', end);
    socket.on('close', end);
  });
  return new Promise((ok) => {
    server.listen(0, '127.0.0.1', () => {
      ok({
        url: `http://127.0.0.1:${server.address().port}`,
        close: () => new Promise((done) => {
          server.closeAllConnections?.();
          server.close(() => done());
        }),
      });
    });
  });
}
