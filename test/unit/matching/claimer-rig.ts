/**
 * A Claimer (src/roles/provider/claimer.ts) for the matching tests: the provider `p` with its advert `ad`, the given
 * open orders, four free slots, no running jobs, no live market, every order runnable, the fixtures' clock, and a
 * `send` that never answers; each test overrides what it is about.
 */
import { Claimer, type ClaimerDeps } from '../../../src/roles/provider/claimer.js';
import type { ClaimOutcome } from '../../../src/roles/claim-protocol.js';
import type { OpenOrders } from '../../../src/matching/open-orders.js';
import type { Advert, Opened } from '../../../src/records/index.js';
import { silentLogger } from '../../../src/util/log.js';
import { NOW, type Party } from '../market/fixtures.js';

export function claimerFor(p: Party, ad: Opened<Advert>, orders: OpenOrders, over: Partial<ClaimerDeps> = {}): Claimer {
  return new Claimer({
    did: p.did,
    signer: p.signer,
    clock: () => NOW,
    log: silentLogger(),
    orders,
    advert: () => ad,
    freeSlots: () => 4,
    runs: () => false,
    live: () => [],
    canRun: () => true,
    send: () => new Promise<ClaimOutcome>(() => {}),
    ...over,
  });
}
