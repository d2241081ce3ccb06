// Validates an AsyncAPI document with the AsyncAPI initiative's own parser, as its tools
// read one: the spec's JSON Schema and its rules (references that resolve, an operation's
// messages on its channel, ids unique, ...). An error or a warning fails; the information
// and hints (such as that a later AsyncAPI version exists) are printed only.
'use strict';
const fs = require('fs');
const { Parser } = require('@asyncapi/parser');

const SEVERITY = ['error', 'warning', 'information', 'hint'];

async function main(path) {
  const { document, diagnostics } = await new Parser().parse(fs.readFileSync(path, 'utf8'));
  let failed = !document;
  for (const d of diagnostics) {
    console.log(`${path}: ${SEVERITY[d.severity]} ${d.code} at /${d.path.join('/')}: ${d.message}`);
    if (d.severity <= 1) failed = true;
  }
  console.log(`${path}: ${failed ? 'NOT valid' : 'valid'} AsyncAPI ${document ? document.version() : ''}`);
  process.exitCode = failed ? 1 : 0;
}

main(process.argv[2]).catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
