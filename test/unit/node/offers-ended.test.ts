/**
 * `c0mpute offers <job>` (`GET /v1/offers/:job`, src/node/control.ts) on a job that has ended. QA (reputation and audit
 * pass, F9): a job done an hour earlier after a failover was explained as the market now, "No provider is eligible
 * among 5 known: 2 of 5 are on the allowlist; but none of them has a live offer for this job. To widen the market: add
 * 3 providers to the allowlist", though it was fulfilled and the node held its offers. Now an ended job (this node's
 * own once its run has an outcome, or any once its deadline passed) says how and when it ended and how many offers
 * are held for it, with no advice to widen (`ended`, and the summary).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { offers } from '../../../src/node/control.js';
import { AdvertIndex, explainMarket, OfferBook } from '../../../src/market/index.js';
import { EvidenceStore } from '../../../src/reputation/store.js';
import { RecordStore } from '../../../src/store/records.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { seal, T, type Job, type Offer, type Opened, type Selection } from '../../../src/records/index.js';
import { signNonDelivery } from '../../../src/reputation/nondelivery.js';
import { shortDid } from '../../../src/util/did-text.js';
import { NOW, P, acceptance, advert, job, offer, receipt } from '../market/fixtures.js';

const BUYER = P(350);
const PS = [1, 2, 3, 4, 5].map((i) => P(350 + i));
const ads = PS.map((p) => advert(p));
const index = new AdvertIndex(ads);

type Answer = { ended?: { how: string; at: number; provider?: string; offersHeld: number; live: number }; explanation: { summary: string; relaxations: unknown[] } };

test('an ended job says how and when it ended and the offers held, never how to widen the market', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-offers-ended-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db);
    const ev = new EvidenceStore();
    const book = new OfferBook();
    const allow = { allowlist: [PS[1]!.did, PS[3]!.did].sort() };
    // the QA's job: two providers allowed; the first winner gone (a non-delivery), the job done by the other
    const done = job(BUYER, { nonce: new Uint8Array([1, 95]), announcedAt: NOW, deadline: NOW + 60_000, requirements: allow });
    const failed = job(BUYER, { nonce: new Uint8Array([2, 95]), announcedAt: NOW, deadline: NOW + 60_000, requirements: allow });
    // another node's job, signed by a node that is not a provider here (a provider is left out of its own job's market: QA qaOps F9)
    const foreign = job(P(360), { nonce: new Uint8Array([3, 95]), announcedAt: NOW, deadline: NOW + 60_000, requirements: allow });
    for (const j of [done, failed, foreign]) await records.put(j);
    const sel = (j: Opened<Job>, o: Opened<Offer>, at: number) => seal(T.selection, { job: j.address, buyer: BUYER.did, policy: 'balanced', winner: o.address, considered: [{ provider: o.signer, offer: o.address }], decidedAt: at }, BUYER.signer) as Opened<Selection>;
    const o1 = offer(PS[3]!, done, ads[3]!);
    const o2 = offer(PS[1]!, done, ads[1]!);
    const s1 = sel(done, o1, NOW + 100);
    await records.putMany([s1, o1]);
    await records.putMany([sel(done, o2, NOW + 5_000), o2]);
    const r2 = receipt(PS[1]!, BUYER, o2, { startedAt: NOW + 5_100, completedAt: NOW + 6_000 });
    const o3 = offer(PS[3]!, failed, ads[3]!);
    const s3 = sel(failed, o3, NOW + 100);
    await records.putMany([s3, o3]);
    await ev.add(signNonDelivery({ job: done, selection: s1, offer: o1, reason: 'unreachable', signedAt: NOW + 4_000, signer: BUYER.signer }), o2, r2, acceptance(BUYER, r2, 'accepted', { signedAt: NOW + 6_500 }));
    await ev.add(signNonDelivery({ job: failed, selection: s3, offer: o3, reason: 'timeout', signedAt: NOW + 9_000, signer: BUYER.signer }));

    let now = NOW + 3_600_000;
    const node = {
      did: BUYER.did,
      clock: () => now,
      records,
      market: { offersFor: () => [], book, evidence: ev, explain: (jj: Opened<Job>, at: number) => explainMarket({ job: jj, adverts: index, offers: [], now: at }) },
    } as unknown as OverlayNode;
    const ask = async (j: Opened<Job>) => (await offers(node, j.address)) as unknown as Answer;

    const a = await ask(done);
    assert.deepEqual(a.ended, { how: 'completed', at: NOW + 6_500, provider: PS[1]!.did, offersHeld: 2, live: 0, summary: a.explanation.summary } as never);
    assert.equal(a.explanation.summary, `This job has ended: completed by ${shortDid(PS[1]!.did)}, its receipt accepted at ${new Date(NOW + 6_500).toISOString()}. 2 offers are held for it, none live; any eligibility shown is the market now, not at its decision.`);
    assert.deepEqual(a.explanation.relaxations, []);

    const b = await ask(failed);
    assert.equal(b.ended?.how, 'failed');
    assert.match(b.explanation.summary, new RegExp(`^This job has ended: failed at ${new Date(NOW + 9_000).toISOString()}: ${shortDid(PS[3]!.did)} did not deliver \\(non-delivery signed: timeout\\)\\. 1 offer is held for it, none live`));

    // another node's job, past its deadline
    const c = await ask(foreign);
    assert.match(c.explanation.summary, new RegExp(`^This job has ended: its deadline passed at ${new Date(NOW + 60_000).toISOString()}\\. 0 offers are held for it, none live`));
    for (const x of [a, b, c]) assert.doesNotMatch(x.explanation.summary, /widen/);

    // before its deadline, another node's job is the live market, widening advice and all
    now = NOW + 1_000;
    const live = await ask(foreign);
    assert.equal(live.ended, undefined);
    assert.match(live.explanation.summary, /To widen the market: add 3 providers to the allowlist/);
    // this node's own job whose run completed has ended, deadline or not
    assert.equal((await ask(done)).ended?.how, 'completed');
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
