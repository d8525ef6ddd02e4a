/**
 * A Buyer whose exec/1 streams are a test's generator, and attempts of it on jobs of its own at a given provider: for
 * tests of what one attempt's ending signs (buyer-busy-input, buyer-busy-slot).
 */
import { C0Error } from '../../../src/errors.js';
import { Buyer, type BuyerDeps, type JobSpec, type RankedCandidate } from '../../../src/roles/buyer.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { Selection } from '../../../src/records/kinds.js';
import { NOW, advert, job, offer, type Party } from '../market/fixtures.js';

export function attemptRig(me: Party, exec: () => AsyncGenerator<unknown>) {
  const noop = () => {};
  const log = { info: noop, warn: noop, debug: noop, error: noop, child: () => log };
  const buyer = new Buyer({ signer: me.signer, did: me.did, clock: () => NOW, log, exec } as unknown as BuyerDeps);
  const sel = { bytes: new Uint8Array(1) } as unknown as Opened<Selection>;
  const spec = { input: new Uint8Array(4) } as unknown as JobSpec;
  /** Attempt the job numbered `i` (its own job) at provider `prov`. */
  const mk = (prov: Party, i: number) => {
    const j = job(me, { announcedAt: NOW + i });
    return { j, cand: { provider: prov.did, offer: offer(prov, j, advert(prov)) } as unknown as RankedCandidate };
  };
  const attempt = (x: ReturnType<typeof mk>) => buyer.attempt(x.j, x.cand, sel, spec, noop);
  return { buyer, mk, attempt };
}

/**
 * An exec generator whose first stream is held open until `release()` (another of our jobs running at the provider)
 * and then fails NET_STREAM_FAILED; every later stream is `then`'s.
 */
export function firstHeld(then: () => AsyncGenerator<unknown>): { exec: () => AsyncGenerator<unknown>; release: () => void } {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let calls = 0;
  return {
    release,
    exec: async function* () {
      if (calls++ > 0) return yield* then();
      await held;
      throw new C0Error('NET_STREAM_FAILED', 'gone');
    },
  };
}
