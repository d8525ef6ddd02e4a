/**
 * A release whose `Released` append fails (src/roles/steward-accounts.ts ClaimAccounts.release; DESIGN.md rule 6,
 * pool/1 §6.2): the claim stays tracked with its reservation until an append succeeds, is released again after a
 * short wait (a bounded number of times), and is not released twice meanwhile; an actual figure the ledger cannot add
 * (receipts summing past 2^53 − 1 µJ, POOL_UJ_TOO_LARGE) is capped at what it can add, graded `Estimator`, and the
 * claim is released. A real Ledger in a temp dir; the append can be made to fail.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { PoolState, treeFromYaml } from '../../../src/pool/index.js';
import { Ledger } from '../../../src/ledger/index.js';
import { ClaimAccounts } from '../../../src/roles/steward-accounts.js';
import { WinnerResolver } from '../../../src/roles/steward-winners.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { steward, tempDir } from '../ledger/helpers.js';
import { NOW, P, job, offer, receipt } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
`;
const buyer = P(1);
const provider = P(21);

async function rig(dir: string, tries = 3) {
  const clock = fakeClock(NOW);
  const ledger = await Ledger.open(join(dir, 'ledger'), { signer: steward, now: clock });
  const pool = new PoolState(treeFromYaml(TREE, 'tree.yaml'), ledger.book);
  ledger.attach(pool);
  const ctl = { failures: 0, appends: 0, freed: 0 };
  const append = async (e: Parameters<Ledger['append']>[0]) => {
    ctl.appends++;
    if (ctl.failures > 0) {
      ctl.failures--;
      throw Object.assign(new Error('IO error: No space left on device'), { code: 'LEVEL_IO_ERROR' });
    }
    return ledger.append(e);
  };
  const accounts = new ClaimAccounts({
    ledger,
    did: 'did:key:steward',
    clock,
    log: silentLogger(),
    stopped: () => false,
    append,
    forget: () => {},
    freed: async () => void ctl.freed++,
    releaseRetry: { baseMs: 20, maxMs: 40, tries },
    winners: new WinnerResolver({ offer: async () => undefined, advert: async () => undefined }),
  });
  const j = job(buyer, { nonce: new Uint8Array([3, 9]) });
  await ledger.append({ event: 'Admitted', claim: j.address, entitlement: 'lab', reserved: { uj: 10_000_000, grade: 'Estimator' }, devices: 1, borrowed_uj: 0 });
  const oj = accounts.track(j.address, 'lab', buyer.did, NOW + 3_600_000);
  // a selection chose the provider's offer (only its receipts are charged)
  const o = offer(provider, j, 'sha256:' + '44'.repeat(32));
  await accounts.choose(oj, { offer: o.address, provider: provider.did, advert: o.record.advert, advertKnown: false });
  const close = async () => {
    accounts.stop();
    await ledger.close();
  };
  return { ledger, accounts, ctl, j, oj, o, close };
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(cond(), `timed out waiting for ${what}`);
}

describe('a release whose append fails', () => {
  it('keeps the claim tracked and releases it on the retry, once', async () => {
    const t = tempDir('c0-release-retry-');
    try {
      const r = await rig(t.dir);
      r.ctl.failures = 1;
      await assert.rejects(r.accounts.onReceipt(receipt(provider, buyer, r.o, { energy: { uj: 4_000_000, grade: 'HwShunt' } })), /No space left/);
      assert.ok(r.accounts.get(r.j.address), 'still tracked');
      assert.ok(r.ledger.book.open.has(r.j.address), 'still open in the ledger');
      await until(() => !r.ledger.book.open.has(r.j.address), 'the retry to release it');
      const rel = (await r.ledger.records(0)).filter((e) => e.event === 'Released');
      assert.equal(rel.length, 1);
      assert.deepEqual(rel[0]!.actual, { uj: 4_000_000, grade: 'HwShunt' });
      assert.equal(r.accounts.get(r.j.address), undefined);
      assert.equal(r.ctl.freed, 1);
      // nothing tries again after it succeeded
      const appends = r.ctl.appends;
      await new Promise((res) => setTimeout(res, 100));
      assert.equal(r.ctl.appends, appends);
      await r.close();
    } finally {
      t.cleanup();
    }
  });

  it('is tried again a bounded number of times, and the claim stays tracked and open', async () => {
    const t = tempDir('c0-release-retry-');
    try {
      const r = await rig(t.dir, 2);
      r.ctl.failures = 1_000;
      await assert.rejects(r.accounts.release(r.oj, 'withdrawn'));
      await until(() => r.ctl.appends === 3, 'two retries');
      await new Promise((res) => setTimeout(res, 150));
      assert.equal(r.ctl.appends, 3, 'the first try and two retries, no more');
      assert.ok(r.accounts.get(r.j.address), 'still tracked');
      assert.ok(r.ledger.book.open.has(r.j.address));
      // a later path (a withdraw) still releases it once the store recovers
      r.ctl.failures = 0;
      await r.accounts.release(r.accounts.get(r.j.address)!, 'withdrawn');
      assert.ok(!r.ledger.book.open.has(r.j.address));
      await r.close();
    } finally {
      t.cleanup();
    }
  });

  it('a second release while the append is in flight does nothing', async () => {
    const t = tempDir('c0-release-retry-');
    try {
      const r = await rig(t.dir);
      const first = r.accounts.release(r.oj, 'completed');
      assert.equal(r.accounts.get(r.j.address), undefined, 'under way: not handed out');
      await r.accounts.release(r.oj, 'deadline');
      await first;
      assert.equal((await r.ledger.records(0)).filter((e) => e.event === 'Released').length, 1);
      assert.equal(r.ctl.appends, 1);
      await r.close();
    } finally {
      t.cleanup();
    }
  });
});

describe('an actual figure the ledger cannot add', () => {
  it('receipts summing past 2^53 − 1 µJ: charged the most the ledger can add, graded Estimator, and released', async () => {
    const t = tempDir('c0-release-cap-');
    try {
      const r = await rig(t.dir);
      const big = 2 ** 52 + 1;
      await r.accounts.onReceipt(receipt(provider, buyer, r.o, { status: 'failed', energy: { uj: big, grade: 'HwShunt' }, completedAt: NOW + 10_000 }));
      await r.accounts.onReceipt(receipt(provider, buyer, r.o, { status: 'completed', energy: { uj: big, grade: 'HwShunt' } }));
      assert.ok(!r.ledger.book.open.has(r.j.address), 'released');
      const rel = (await r.ledger.records(0)).filter((e) => e.event === 'Released');
      assert.deepEqual(rel[0]!.actual, { uj: Number.MAX_SAFE_INTEGER, grade: 'Estimator' });
      assert.equal(r.ledger.book.usage('lab').usedUj, Number.MAX_SAFE_INTEGER);
      assert.equal(r.accounts.get(r.j.address), undefined);
      await r.close();
    } finally {
      t.cleanup();
    }
  });
});
