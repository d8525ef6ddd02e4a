/**
 * `c0mpute batch run --output-dir D` with a D that cannot be made (a file there, a path through a file): before, the
 * lines were posted, ran and were paid for (`completed, accepted`), then each output was thrown away (`could not keep
 * the output: EEXIST …`) and the batch ended `OUTPUT_UNWRITABLE: cannot write D/summary.json`. Now D is made before
 * anything is asked of the daemon, as `run --output` is checked: OUTPUT_UNWRITABLE, exit 3, nothing posted.
 *
 * A fake daemon (fake-batch-daemon.ts) that would plan every line on one provider and complete each `/v1/run` with
 * an output and a receipt; every request it gets is counted.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT } from '../../../src/cli/context.js';
import { P } from '../market/fixtures.js';
import { runNode } from './cli-run.js';
import { fakeBatchDaemon, type FakeBatchDaemon } from './fake-batch-daemon.js';

const BIN = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'c0-batch-output-dir-'));
const provider = P(952).did;
let daemon: FakeBatchDaemon;
const dataDir = join(root, 'buyer');
const file = join(root, 'b.yaml');
const afile = join(root, 'afile');

before(async () => {
  daemon = await fakeBatchDaemon(dataDir, provider, { slots: 2 });
  writeFileSync(file, 'window: 10m\nworkloads: [{ workload: builtin.sha256, lines: 2, lineTime: 2s, maxPrice: "0.01 USD", params: "1000", inputText: "line {n}" }]\n');
  writeFileSync(afile, 'x');
});

after(() => {
  daemon?.close();
  rmSync(root, { recursive: true, force: true });
});

const run = (outDir: string) => runNode([BIN, '--data-dir', dataDir, 'batch', 'run', file, '--output-dir', outDir], { env: { ...process.env, C0MPUTE_HOME: join(root, 'unused-home') }, timeout: 60_000 });

describe('batch run --output-dir that cannot be made', () => {
  for (const [what, outDir] of [
    ['a file', () => afile],
    ['a path through a file', () => join(afile, 'sub')],
  ] as const) {
    it(`${what}: OUTPUT_UNWRITABLE (exit 3) before the daemon is asked, no line posted`, async () => {
      daemon.asked.length = 0;
      const r = await run(outDir());
      assert.equal(r.status, EXIT.OPERATOR, r.stderr);
      assert.match(r.stderr, /^error OUTPUT_UNWRITABLE: cannot write .*: .*afile is a file, not a directory$/m);
      assert.deepEqual(daemon.asked, [], 'nothing asked of the daemon: no line posted, none paid for');
      assert.doesNotMatch(r.stderr, /could not keep the output/);
      assert.equal(readFileSync(afile, 'utf8'), 'x', 'the file there is left as it was');
    });
  }

  it('no daemon: DAEMON_NOT_RUNNING, and the directory it made is taken away again', async () => {
    const outDir = join(root, 'never', 'out');
    const r = await runNode([BIN, '--data-dir', join(root, 'no-daemon'), 'batch', 'run', file, '--output-dir', outDir], { env: { ...process.env, C0MPUTE_HOME: join(root, 'unused-home') }, timeout: 60_000 });
    assert.equal(r.status, EXIT.OPERATOR, r.stderr);
    assert.match(r.stderr, /^error DAEMON_NOT_RUNNING: /m);
    assert.equal(existsSync(join(root, 'never')), false, 'nothing left behind');
  });

  // the fake daemon itself: a directory that can be made is, and the lines run and are kept there
  it('a directory that can be made: the lines run and their outputs and summary.json are kept', async () => {
    daemon.asked.length = 0;
    const outDir = join(root, 'new', 'out');
    const r = await run(outDir);
    assert.equal(r.status, EXIT.OK, r.stderr);
    assert.equal(daemon.asked.filter((a) => a.startsWith('POST /v1/run')).length, 2);
    assert.ok(statSync(join(outDir, 'summary.json')).isFile());
    const outs = readdirSync(outDir).filter((f) => f.endsWith('.out'));
    assert.equal(outs.length, 2, outs.join());
    for (const f of outs) assert.equal(readFileSync(join(outDir, f), 'utf8'), 'now');
  });
});
