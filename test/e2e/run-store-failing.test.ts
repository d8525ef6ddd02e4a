/**
 * A run asked of a daemon whose database already takes no writes (a full disk; docs/node.md "When a write fails"):
 * POST /v1/run is refused before anything starts, 503 with STORE_WRITE_FAILED in the usual JSON error body, not a
 * 200 whose NDJSON stream ends in the error; nothing is published or stored, and `c0mpute run` prints the error and
 * exits 3. A real daemon in process (real LevelDB, real HTTP); the failed write is injected (store/db.ts
 * injectWriteFault) and the disk probe held failing, so the database stays unwritable for the test.
 */
import '../../src/polyfill.js';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon } from '../../src/node/daemon.js';
import { parseConfig } from '../../src/node/config.js';
import { loadIdentity } from '../../src/node/identity.js';
import { createLogger } from '../../src/util/log.js';
import { apiCall, ensureToken } from '../../src/node/api.js';
import { injectWriteFault, setRecovery, storeHealth, sub } from '../../src/store/db.js';
import { C0Error } from '../../src/errors.js';
import { Cluster, buyerConfig, c0mpute } from './node-helpers.js';

const c = new Cluster('run-store');
after(async () => {
  await c.destroy();
});

test('POST /v1/run on a node whose database takes no writes: 503 STORE_WRITE_FAILED before any stream; nothing kept; `c0mpute run` exits 3 with it', async () => {
  const { dir } = c.dataDir('b');
  const log = createLogger({ level: 'info', format: 'json', fd: openSync(join(dir, 'node.log'), 'a') });
  const d = await Daemon.start({ dataDir: dir, config: parseConfig(buyerConfig()), identity: loadIdentity(dir), log });
  try {
    // the disk stays full: the probe never succeeds, so the database is not reopened during the test
    setRecovery(d.db, { probe: async () => false, firstDelayMs: 60_000, maxDelayMs: 60_000 });
    injectWriteFault(d.db, Object.assign(new Error('IO error: /data/db/000003.log: No space left on device'), { code: 'LEVEL_IO_ERROR' }));
    await assert.rejects(sub(d.db, 'test').put('k', new Uint8Array([1])), (e: unknown) => e instanceof C0Error && e.code === 'STORE_WRITE_FAILED');
    assert.equal(storeHealth(d.db).ok, false);

    const token = ensureToken(dir);
    const spec = { workload: 'builtin.sha256', maxPrice: '0.1 USD', deadlineMs: 30_000, input: Buffer.from('hello').toString('base64') };
    const res = await fetch(`http://${d.apiAddress}/v1/run`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(spec) });
    const text = await res.text();
    assert.equal(res.status, 503, `refused upfront, not streamed: ${res.status} ${text.slice(0, 300)}`);
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
    assert.equal(body.error?.code, 'STORE_WRITE_FAILED');
    assert.match(body.error?.message ?? '', /No space left on device/);

    // nothing was kept as this node's job
    const jobs = (await apiCall(d.apiAddress!, token, 'GET', '/v1/jobs')) as { jobs: unknown[] };
    assert.deepEqual(jobs.jobs, []);

    // the CLI, through the daemon: the error, exit 3 (an operator's matter, not a job that failed)
    const job = join(dir, 'job.yaml');
    writeFileSync(job, 'workload: builtin.sha256\nmaxPrice: 0.1 USD\ndeadline: 30s\ninput: hello\n');
    const r = await c0mpute(dir, ['run', job]);
    assert.equal(r.code, 3, r.out + r.err);
    assert.match(r.err, /^error STORE_WRITE_FAILED: .*No space left on device/m);
    assert.equal(r.out, '', 'no run event was printed');
  } finally {
    await d.stop();
  }
});
