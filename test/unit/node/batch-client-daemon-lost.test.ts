/**
 * The batch runner over the control API when the buyer's daemon dies mid-batch (docs/matching.md "The daemon goes
 * away"): a line whose `/v1/run` stream breaks is `unknown`, and its job is the one the daemon named in the run's early
 * `job` / `order` events, so `c0mpute jobs` after the restart tells which job was which line. Before, `runLine` kept
 * only the run's `result` and `error` events, and every `unknown` line of a SIGKILLed daemon came without its job.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Batch } from '../../../src/matching/batch-plan.js';
import { runBatch, type BatchRunEvent } from '../../../src/matching/batch-run.js';
import { apiBatchPorts, type BatchLine } from '../../../src/node/batch-client.js';

const WL = 'exec.slow';
const USD = (amount: string) => ({ amount, currency: 'USD' });
const JOB1 = 'sha256:' + 'a1'.repeat(32);

const readBody = async (req: IncomingMessage): Promise<Record<string, unknown>> => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
};

/**
 * A daemon with provider A (2 slots) that plans every line on A and, for `/v1/run`, says line 1's job (`job`, then
 * `order`) and says nothing for line 2; once both runs are in, it dies (every connection broken).
 */
async function dyingDaemon() {
  const open: ServerResponse[] = [];
  const server = createServer((req, res) => {
    void (async () => {
      const body = req.method === 'POST' ? await readBody(req) : {};
      const json = (o: unknown) => (res.writeHead(200, { 'content-type': 'application/json' }), res.end(JSON.stringify(o)));
      if (req.url?.startsWith('/v1/market')) return json({ presence: { providers: [{ did: 'A', freeSlots: 2 }] } });
      if (req.url?.startsWith('/v1/batch/plan')) {
        const lines = (body.batch as Batch).workloads[0]!.lines;
        return json({ plannedAt: 0, windowMs: 60_000, assignments: [{ workload: WL, provider: 'A', lines, ask: USD('0.002'), unit: 'job', cost: USD('0') }], providers: [], totals: [], lines });
      }
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.flushHeaders();
      if (body.params === '1') {
        res.write(JSON.stringify({ e: 'job', job: { address: JOB1, record: { workload: WL } } }) + '\n');
        res.write(JSON.stringify({ e: 'order', job: JOB1, designated: 'A', bid: USD('1') }) + '\n');
      }
      open.push(res);
      // SIGKILL: both runs' streams break at once, after line 1's events went out
      if (open.length === 2) setTimeout(() => server.closeAllConnections(), 50);
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, base: `127.0.0.1:${(server.address() as AddressInfo).port}` };
}

test('the daemon dies with two lines running: the unknown line whose job the daemon named carries it (perLine, attempt, line event)', async () => {
  const { server, base } = await dyingDaemon();
  const dir = mkdtempSync(join(tmpdir(), 'c0-batch-lost-'));
  try {
    const batch: Batch = { windowMs: 60_000, workloads: [{ workload: WL, lines: 2, units: { job: '1' }, lineMs: 1000, maxPrice: USD('1') }] };
    const lines: BatchLine[] = [1, 2].map((n) => ({ id: `${WL}-${n}`, workload: WL, n, params: String(n), inputBytes: 0, deadlineMs: 30_000, maxPrice: USD('1') }));
    const events: BatchRunEvent[] = [];
    const ports = apiBatchPorts({ api: base, token: 't', outputDir: join(dir, 'out'), onEvent: (e) => events.push(e) });
    await ports.refreshSlots();
    const s = await runBatch({ batch, lines, concurrency: 2 }, ports);

    assert.equal(s.stopped?.code, 'DAEMON_STREAM_LOST');
    assert.deepEqual(s.failedProviders, []);
    assert.equal(s.unknown, 2);
    const [one, two] = s.perLine;
    assert.equal(one!.status, 'unknown');
    assert.equal(one!.job, JOB1, 'the job the daemon named before it died');
    assert.equal(one!.attempts[0]!.job, JOB1);
    assert.equal(two!.status, 'unknown');
    assert.equal(two!.job, undefined, 'a line whose job the daemon never named has none');
    const ev = events.find((e) => e.e === 'line' && e.line === one!.id);
    assert.ok(ev && ev.e === 'line' && ev.status === 'unknown' && (ev as { job?: string }).job === JOB1, 'its `line … unknown` event names the job');
  } finally {
    server.closeAllConnections();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
