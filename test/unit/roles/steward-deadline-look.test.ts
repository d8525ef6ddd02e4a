/**
 * A claim released at its deadline (src/roles/steward-accounts.ts #closeAtDeadline; pool/1 §6.2: "what the tenant
 * spent is what it spent"): before the release charges what is held, the claim's buyer and provider are asked for
 * the receipts naming its job (records/1 `jobs`, AccountsDeps.askJobs), so a completed receipt this steward has not
 * read yet is charged. Before, a steward suspended (SIGSTOP) across a claim's deadline ran its overdue timer before
 * reading the completed receipt buffered on its connection, and released the claim charging {0, Estimator}; the
 * receipt came 31 ms later and was never charged (a `Released` is final). A real Ledger in a temp dir; the parties'
 * answers are the test's; the wall and monotonic clocks are fakes.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Opened } from '../../../src/records/envelope.js';
import { T, type Job, type Offer, type Receipt, type Selection } from '../../../src/records/kinds.js';
import { seal } from '../../../src/records/envelope.js';
import { PoolState, treeFromYaml } from '../../../src/pool/index.js';
import { Ledger } from '../../../src/ledger/index.js';
import { ClaimAccounts, START_LOOK_MS } from '../../../src/roles/steward-accounts.js';
import { WinnerResolver } from '../../../src/roles/steward-winners.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { steward, tempDir } from '../ledger/helpers.js';
import { NOW, P, job, offer, receipt } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 1000000000, guarantee_devices: 8, over_quota_weight: 0, priority: 0 }
`;
const buyer = P(1);
const provider = P(21);

/**
 * Claim accounts over a real ledger, past their start (START_LOOK_MS on the fake monotonic clock); `answer`: what a
 * party hands over when asked for the records naming `jobs` (each goes through the accounts' receipt handler, as the
 * steward's gossip handler does).
 */
async function rig(dir: string, answer: (party: string, jobs: string[]) => Promise<Array<Opened<Receipt> | Opened<Selection>>>, offers = new Map<string, Opened<Offer>>()) {
  const clock = fakeClock(NOW);
  const mono = fakeClock(1_000);
  const ledger = await Ledger.open(join(dir, 'ledger'), { signer: steward, now: clock });
  const pool = new PoolState(treeFromYaml(TREE, 'tree.yaml'), ledger.book);
  ledger.attach(pool);
  const asked: Array<{ party: string; kinds: string[]; jobs: string[] }> = [];
  const accounts: ClaimAccounts = new ClaimAccounts({
    ledger,
    did: 'did:key:steward',
    clock,
    monoClock: mono,
    log: silentLogger(),
    stopped: () => false,
    append: (e, o) => ledger.append(e, o),
    forget: () => {},
    freed: async () => {},
    winners: new WinnerResolver({ offer: async (a) => offers.get(a), advert: async () => undefined }),
    askJobs: async (party, kinds, jobs) => {
      asked.push({ party, kinds, jobs });
      for (const r of await answer(party, jobs)) {
        if (r.type === T.selection) await accounts.onSelection(r as Opened<Selection>);
        else await accounts.onReceipt(r as Opened<Receipt>);
      }
      return { accepted: 0, failed: {} };
    },
  });
  mono.advance(START_LOOK_MS); // the network is up
  /** An admitted claim for a job of the buyer's whose deadline is `ago` ms past (+ the 5 s grace), its provider chosen. */
  const admitted = async (n: number, ago: number, chosen = true) => {
    const j: Opened<Job> = job(buyer, { nonce: new Uint8Array([n, 7]), announcedAt: NOW - 600_000, deadline: NOW - 5_000 - ago });
    await ledger.append({ event: 'Admitted', claim: j.address, entitlement: 'lab', reserved: { uj: 10_000_000, grade: 'Estimator' }, devices: 1, borrowed_uj: 0 });
    const o = offer(provider, j, 'sha256:' + '44'.repeat(32));
    const oj = accounts.track(j.address, 'lab', buyer.did, j.record.deadline);
    if (chosen) await accounts.choose(oj, { offer: o.address, provider: provider.did, advert: o.record.advert, advertKnown: false });
    return { j, o };
  };
  const released = async () => (await ledger.records(0)).filter((e) => e.event === 'Released');
  const close = async () => {
    accounts.stop();
    await ledger.close();
  };
  return { accounts, asked, admitted, released, close, clock };
}

async function until(cond: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 500 && !(await cond()); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(await cond(), `timed out waiting for ${what}`);
}

describe('a claim released at its deadline', () => {
  it('first asks its buyer and provider for its receipts: a completed one not read yet is charged, not {0, Estimator}', async () => {
    const t = tempDir('c0-deadline-look-');
    // the provider holds the completed receipt the steward did not read (it waited on the steward's connection)
    const held = new Map<string, Opened<Receipt>>();
    const r = await rig(t.dir, async (party, jobs) => (party === provider.did ? jobs.map((j) => held.get(j)!).filter(Boolean) : []));
    try {
      // the steward's timer for the deadline is overdue as it runs (a suspended process resumed): it fires at once
      const { j, o } = await r.admitted(1, 1_000);
      held.set(j.address, receipt(provider, buyer, o, { energy: { uj: 100_177_001, grade: 'HwShunt' } }));
      await until(async () => (await r.released()).length === 1, 'the release');
      assert.deepEqual((await r.released())[0]!.actual, { uj: 100_177_001, grade: 'HwShunt' });
      assert.deepEqual(
        r.asked.map((a) => [a.party, a.kinds, a.jobs]).sort(),
        [
          [buyer.did, ['selection', 'receipt'], [j.address]],
          [provider.did, ['selection', 'receipt'], [j.address]],
        ].sort(),
      );
    } finally {
      await r.close();
      t.cleanup();
    }
  });

  it('with no provider known (a claims store from before winners were kept), the provider the buyer’s selection names is asked in a second round', async () => {
    const t = tempDir('c0-deadline-look-nowinner-');
    const offers = new Map<string, Opened<Offer>>();
    let state: { j: Opened<Job>; o: Opened<Offer> } | undefined;
    const r = await rig(
      t.dir,
      async (party) => {
        const { j, o } = state!;
        // the buyer hands over its selection only; the provider holds the completed receipt
        if (party === buyer.did) return [seal(T.selection, { job: j.address, buyer: buyer.did, policy: 'cheapest', winner: o.address, considered: [{ provider: provider.did, offer: o.address }], decidedAt: NOW - 500_000 }, buyer.signer) as Opened<Selection>];
        return party === provider.did ? [receipt(provider, buyer, o, { energy: { uj: 100_177_001, grade: 'HwShunt' } })] : [];
      },
      offers,
    );
    try {
      const j = job(buyer, { nonce: new Uint8Array([5, 7]), announcedAt: NOW - 600_000, deadline: NOW - 6_000 });
      const o = offer(provider, j, 'sha256:' + '44'.repeat(32));
      offers.set(o.address, o);
      state = { j, o };
      await r.admitted(5, 1_000, false);
      await until(async () => (await r.released()).length === 1, 'the release');
      assert.deepEqual((await r.released())[0]!.actual, { uj: 100_177_001, grade: 'HwShunt' });
      assert.deepEqual(r.asked.map((a) => a.party), [buyer.did, provider.did]);
    } finally {
      await r.close();
      t.cleanup();
    }
  });

  it('with nothing more to find (nobody holds a receipt, or nobody answers) it is released with what is held', async () => {
    const t = tempDir('c0-deadline-look-none-');
    const r = await rig(t.dir, async (party) => {
      if (party === provider.did) throw new Error('NET_DIAL: provider gone');
      return [];
    });
    try {
      const { o } = await r.admitted(2, 1_000);
      // a failed attempt's receipt was heard in time: it is what the release charges
      await r.accounts.onReceipt(receipt(provider, buyer, o, { status: 'failed', energy: { uj: 7_000, grade: 'HwShunt' } }));
      await until(async () => (await r.released()).length === 1, 'the release');
      assert.deepEqual((await r.released())[0]!.actual, { uj: 7_000, grade: 'HwShunt' });
    } finally {
      await r.close();
      t.cleanup();
    }
  });

  it('one look at a time: claims coming due while one is under way wait for it, then are looked at together (each party asked once)', async () => {
    const t = tempDir('c0-deadline-look-batch-');
    let open!: () => void;
    const gate = new Promise<void>((res) => (open = res));
    const r = await rig(t.dir, async () => {
      await gate;
      return [];
    });
    try {
      const a = await r.admitted(3, 1_000);
      await until(async () => r.asked.length === 2, 'the first look');
      const b = await r.admitted(4, 1_000);
      const c = await r.admitted(5, 2_000);
      await new Promise((res) => setTimeout(res, 50));
      assert.equal(r.asked.length, 2, 'nothing more asked while the first look is under way');
      assert.deepEqual(await r.released(), []);
      open();
      await until(async () => (await r.released()).length === 3, 'the three releases');
      for (const rel of await r.released()) assert.deepEqual(rel.actual, { uj: 0, grade: 'Estimator' });
      assert.deepEqual(r.asked.slice(0, 2).map((q) => q.jobs), [[a.j.address], [a.j.address]]);
      assert.equal(r.asked.length, 4, 'the buyer and the provider once more, for both');
      for (const q of r.asked.slice(2)) assert.deepEqual([...q.jobs].sort(), [b.j.address, c.j.address].sort());
    } finally {
      open();
      await r.close();
      t.cleanup();
    }
  });
});
