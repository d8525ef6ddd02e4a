/**
 * `c0mpute batch run` against real daemons (docs/matching.md "Batch runs";
 * issue #12): three equally priced providers and a buyer. A batch the live
 * network cannot take is refused with its shortfall before anything is signed
 * (the buyer holds no job afterwards). Then a 24-line batch runs; one
 * provider is SIGKILLed midway; the run completes by re-planning its lines
 * over the other two: every line has a completed receipt and an output equal
 * to SHA-256 of its input.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, Cluster, bootstrapAddr, buyerConfig, c0mpute, get, providerConfig, sha256Rounds, waitFor, waitForMarket, withLogs, type NodeProc } from './node-helpers.js';

const c = new Cluster('batchrun');
after(async () => {
  await c.destroy();
});

interface Summary {
  lines: number;
  done: number;
  failed: number;
  replanned: number;
  failedProviders: Array<{ provider: string }>;
  receipts: Array<{ line: string; address: string; status: string; provider: string; price: { amount: string; currency: string } }>;
  cost: Array<{ amount: string; currency: string }>;
  perLine: Array<{ id: string; status: string; provider: string; receipt: string; attempts: Array<{ provider: string; status: string }> }>;
}

test('batch run: an oversized batch is refused before anything is signed; a provider killed midway is re-planned around and every line completes', async () => {
  const provider = () => {
    const pc = providerConfig({ price: '0.002', baseMs: 500, slots: 1 });
    Object.assign(pc.provider as Record<string, unknown>, { presenceWindowMs: 4000, presenceEveryMs: 1000 });
    return pc;
  };
  const p1 = await c.start('p1', provider());
  const boot = [bootstrapAddr(p1)];
  // Everyone else bootstraps from p1 alone: they start side by side (the waits below hold until the buyer sees all three).
  const [p2, p3, b] = await Promise.all([
    c.start('p2', { ...provider(), network: { ...(provider().network as object), bootstrap: boot } }),
    c.start('p3', { ...provider(), network: { ...(provider().network as object), bootstrap: boot } }),
    c.start('b', buyerConfig({ bootstrap: boot, collectWindowMs: 3000, enoughOffers: 1 })),
  ]);
  const providers = [p1, p2, p3];
  await withLogs(c, async () => {
    await waitForMarket(b, 3, providers);
    await waitFor('the buyer to see three providers present', async () => {
      const m = await get<{ presence: { live: number } }>(b, '/v1/market');
      return m.presence.live === 3;
    }, 45_000);

    // 1. Refused: 3 providers × ⌊0.5 (unknown reputation) × min(1 slot × 300 runs, ceiling 64)⌋ = 96 < 500 lines.
    const big = join(c.root, 'big.yaml');
    writeFileSync(big, 'window: 10m\nworkloads: [{ workload: builtin.sha256, lines: 500, lineTime: 2s, maxPrice: "0.01 USD", params: "1000", inputText: "line {n}" }]\n');
    const r = await c0mpute(b.dir, ['batch', 'run', big, '--output-dir', join(c.root, 'big.out')]);
    assert.equal(r.code, 1, r.err + r.out);
    assert.match(r.err, /^error BATCH_EXCEEDS_CAPACITY: .*builtin\.sha256: 404 of 500 lines unplaced/m);
    assert.deepEqual((await get<{ jobs: unknown[] }>(b, '/v1/jobs')).jobs, [], 'nothing was signed or published');
    assert.equal(existsSync(join(c.root, 'big.out')), false);

    // 2. 24 lines over three providers; one is SIGKILLed once 6 lines are done.
    const file = join(c.root, 'batch.yaml');
    writeFileSync(file, 'window: 10m\nworkloads: [{ workload: builtin.sha256, lines: 24, lineTime: 2s, maxPrice: "0.01 USD", params: "1000", inputText: "line {n}", deadline: 10s }]\n');
    const out = join(c.root, 'out');
    const child = spawn(process.execPath, [BIN, '--data-dir', b.dir, 'batch', 'run', file, '--output-dir', out, '--json'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, C0MPUTE_LOG_LEVEL: 'warn' } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number>((resolve) => child.once('close', (code) => resolve(code ?? -1)));
    const events = () => stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { e: string; status?: string; provider?: string; plan?: { assignments: Array<{ provider: string; lines: number }> } });
    let victim: NodeProc;
    try {
      const plan = await waitFor('the plan', () => events().find((e) => e.e === 'planned')?.plan, 60_000);
      assert.equal(plan.assignments.length, 3, 'equal prices: every provider takes lines');
      assert.deepEqual(plan.assignments.map((a) => a.lines), [8, 8, 8]);
      await waitFor('6 lines done', () => events().filter((e) => e.e === 'line' && e.status === 'done').length >= 6, 120_000);
      // the provider with the most lines still to run
      const doneBy = (d: string) => events().filter((e) => e.e === 'line' && e.status === 'done' && e.provider === d).length;
      victim = providers.sort((x, y) => doneBy(x.did) - doneBy(y.did))[0]!;
      await c.stop(victim, 'SIGKILL');
      const code = await waitFor('batch run to finish', () => (child.exitCode !== null ? exited : undefined), 240_000);
      assert.equal(code, 0, stderr + stdout.slice(-3000));
    } finally {
      child.kill('SIGKILL');
    }

    const s = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as Summary;
    assert.equal(s.lines, 24);
    assert.equal(s.done, 24);
    assert.equal(s.failed, 0);
    assert.ok(s.replanned >= 1, 'the victim’s lines were re-planned');
    assert.deepEqual(s.failedProviders.map((f) => f.provider), [victim.did]);
    const byAddress = new Map(s.receipts.map((x) => [x.address, x]));
    for (const l of s.perLine) {
      assert.equal(l.status, 'done', l.id);
      assert.notEqual(l.provider, undefined);
      const rc = byAddress.get(l.receipt);
      assert.equal(rc?.status, 'completed', l.id);
      assert.equal(rc?.provider, l.provider);
      const n = Number(l.id.slice('builtin.sha256-'.length));
      assert.equal(readFileSync(join(out, `${l.id}.out`), 'utf8'), sha256Rounds(Buffer.from(`line ${n}`), 1000), l.id);
    }
    // the lines after the kill ran on the two survivors
    assert.ok(s.perLine.filter((l) => l.attempts.length > 1).every((l) => l.provider !== victim.did));
    // cost: exactly 24 × 0.002 for the completed lines (a failed receipt, if the victim signed one, is not paid)
    assert.deepEqual(s.cost, [{ amount: '0.048', currency: 'USD' }]);
    const summaryLine = events().find((e) => e.e === 'summary');
    assert.ok(summaryLine);
  });
});
