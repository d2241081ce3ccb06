// Bundles the client into OUTDIR (default dist/): app.js (src/main.js and its imports, the
// TypeScript SDK from ../ts/dist and @msgpack/msgpack included), app.css, and index.html with both URLs carrying a hash of
// their content, so the server may let browsers cache them for good.
//
//   node build.mjs [OUTDIR [NODE_MODULES]]
//
// NODE_MODULES (default ./node_modules) is where esbuild and @msgpack/msgpack are
// installed: server/build.rs installs them in its own OUT_DIR, leaving this tree as it is.

import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outdir = resolve(process.argv[2] ?? join(here, 'dist'));
const modules = resolve(process.argv[3] ?? join(here, 'node_modules'));
const { build } = createRequire(join(modules, '..', 'build.mjs'))('esbuild');
mkdirSync(outdir, { recursive: true });

const result = await build({
  entryPoints: { app: join(here, 'src/main.js'), 'app-css': join(here, 'src/app.css') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2022'],
  legalComments: 'none',
  write: false,
  outdir,
  nodePaths: [modules],
  logLevel: 'warning',
});

const hash = (bytes) => createHash('sha256').update(bytes).digest('hex').slice(0, 12);
const files = {};
for (const file of result.outputFiles) {
  const name = file.path.endsWith('.css') ? 'app.css' : 'app.js';
  files[name] = file.contents;
}
if (!files['app.js'] || !files['app.css']) throw new Error('esbuild produced no app.js or app.css');
let html = readFileSync(join(here, 'index.html'), 'utf8');
for (const name of ['app.js', 'app.css']) {
  if (!html.includes(`"/${name}"`)) throw new Error(`index.html does not reference /${name}`);
  html = html.replace(`"/${name}"`, `"/${name}?v=${hash(files[name])}"`);
  writeFileSync(join(outdir, name), files[name]);
}
writeFileSync(join(outdir, 'index.html'), html);
console.log(`built ${Object.keys(files).join(', ')}, index.html into ${outdir}`);
