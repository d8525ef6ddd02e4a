/**
 * A node keeps at most STEWARD_ASKS admission asks open at its steward (src/roles/admission-client.ts inAskSlot): a
 * further ask waits on the node for one to end, in order, and past its claim's deadline is refused STEWARD_ASKS_BUSY
 * with nothing sent. Before (review s43), an ask past the protocol's 288 outbound streams failed NET_DIAL_FAILED at
 * once and its run ended with it. admitJob over a stub steward that holds every ask open until told (here with 2
 * places, as 256 would be with 256).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { admitJob, STEWARD_ASKS, type AdmitJobOptions } from '../../../src/roles/admission-client.js';
import { STEWARD_STREAMS } from '../../../src/net/protocols.js';
import { Slots } from '../../../src/util/serial.js';
import type { StewardRequest } from '../../../src/roles/admission-client.js';
import { P, job } from '../market/fixtures.js';
import { C0Error } from '../../../src/errors.js';

/** A steward that answers `queued` at once and `admitted` when its ask is released; counts asks open at once. */
function holdingSteward() {
  let open = 0;
  let most = 0;
  const asked: string[] = [];
  const held = new Map<string, () => void>();
  const request: StewardRequest = async (frames, opts) => {
    const j = (frames[0] as { job: Uint8Array }).job;
    const id = Buffer.from(j).toString('hex').slice(-16);
    asked.push(id);
    open++;
    most = Math.max(most, open);
    opts.onFrame?.({ t: 'queued', reason: 'DEVICES_HELD' });
    await new Promise<void>((r) => held.set(id, r));
    opts.onFrame?.({ t: 'admitted', reserved: { uj: 1, grade: 'Estimator' }, borrowed_uj: 0 });
    open--;
    return [];
  };
  return { request, asked, held, most: () => most };
}

const idOf = (j: ReturnType<typeof job>) => Buffer.from(j.bytes).toString('hex').slice(-16);

describe('admission asks open at the steward at once', () => {
  it('is the steward line per buyer, leaving the protocol headroom for withdraws', () => {
    assert.equal(STEWARD_ASKS, 256);
    assert.ok(STEWARD_ASKS < STEWARD_STREAMS);
  });

  it('a third ask with two places waits for one to end, then is sent; none fails', async () => {
    const s = holdingSteward();
    const asks = new Slots(2);
    const now = Date.now();
    const jobs = [1, 2, 3].map((n) => job(P(1), { nonce: new Uint8Array([n, 9]), announcedAt: now - 1_000, deadline: now + 60_000 } as never));
    const opts = (j: ReturnType<typeof job>): AdmitJobOptions => ({ request: s.request, asks, job: j, spec: { entitlement: 'one' } as never, clock: () => Date.now(), onQueued: () => {}, overlay: 'lab' });
    const runs = jobs.map((j) => admitJob(opts(j)));
    await new Promise((r) => setTimeout(r, 20));
    // before: all three sent at once (the 289th of a real node's failed NET_DIAL_FAILED)
    assert.deepEqual(s.asked, [idOf(jobs[0]!), idOf(jobs[1]!)]);
    s.held.get(idOf(jobs[0]!))!();
    assert.equal((await runs[0])!.verdict, 'Admit');
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(s.asked.length, 3);
    s.held.get(idOf(jobs[1]!))!();
    s.held.get(idOf(jobs[2]!))!();
    const all = await Promise.all(runs);
    assert.deepEqual(all.map((a) => a.verdict), ['Admit', 'Admit', 'Admit']);
    assert.equal(s.most(), 2);
  });

  it('an ask still waiting for a place at its deadline is refused STEWARD_ASKS_BUSY, nothing sent', async () => {
    const s = holdingSteward();
    const asks = new Slots(1);
    const now = Date.now();
    const long = job(P(1), { nonce: new Uint8Array([1, 7]), announcedAt: now - 1_000, deadline: now + 60_000 } as never);
    const short = job(P(1), { nonce: new Uint8Array([2, 7]), announcedAt: now - 1_000, deadline: now + 150 } as never);
    const first = admitJob({ request: s.request, asks, job: long, spec: { entitlement: 'one' } as never, clock: () => Date.now(), onQueued: () => {}, overlay: 'lab' });
    await assert.rejects(
      admitJob({ request: s.request, asks, job: short, spec: { entitlement: 'one' } as never, clock: () => Date.now(), onQueued: () => {}, overlay: 'lab' }),
      (e: { code?: string; message: string }) => e.code === 'STEWARD_ASKS_BUSY' && /nothing was sent/.test(e.message),
    );
    assert.deepEqual(s.asked, [idOf(long)]);
    assert.equal(asks.busy, 1);
    s.held.get(idOf(long))!();
    assert.equal((await first).verdict, 'Admit');
    assert.equal(asks.busy, 0);
  });
});

it('a steward that cannot be dialled is STEWARD_UNREACHABLE naming it and the overlay, the dial’s error kept as the cause (it was libp2p’s NET_DIAL_FAILED with a PeerId only)', async () => {
  const now = Date.now();
  const j = job(P(1), { nonce: new Uint8Array([4, 2]), announcedAt: now - 1_000, deadline: now + 60_000 } as never);
  const steward = P(2).did;
  const dial = new C0Error('NET_DIAL_FAILED', 'cannot open /c0mpute/steward/1 to 12D3KooW…: connect ECONNREFUSED');
  await assert.rejects(
    admitJob({ request: async () => Promise.reject(dial), job: j, spec: { entitlement: 'one' } as never, clock: () => Date.now(), onQueued: () => {}, overlay: 'lab', steward }),
    (e: C0Error) => {
      assert.equal(e.code, 'STEWARD_UNREACHABLE');
      assert.match(e.message, new RegExp(`^cannot reach the steward ${steward} of overlay lab .*ECONNREFUSED$`));
      assert.equal((e as { cause?: unknown }).cause, dial);
      return true;
    },
  );
});
