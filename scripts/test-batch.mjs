// One process for a batch of compiled unit test files (scripts/run-tests.mjs):
// each is imported in turn and Node's test runner runs their tests in that
// order, one at a time, as it runs a single file's. A process that ends before
// the last file's tests have (a test calling process.exit) fails the batch, so
// the files after it cannot go unrun unnoticed.
import { after } from 'node:test';
import { pathToFileURL } from 'node:url';

const files = process.argv.slice(2);
let finished = false;
process.on('exit', (code) => {
  if (finished || code !== 0) return;
  console.error(`✖ the process ended before the batch's tests had run (exit ${code}): ${files.join(', ')}`);
  process.exitCode = 1;
});
for (const file of files) await import(pathToFileURL(file).href);
after(() => {
  finished = true;
});
