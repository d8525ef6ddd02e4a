/**
 * Open orders on an overlay (docs/matching.md "Open orders, claims and
 * leases"; spec/matching-and-leases.md "Leases"): every node keeps the open
 * orders it hears (jobs with `order`, dropped when the buyer's first-claim
 * selection is seen or at the deadline) and fills the overlay's matching
 * hooks from them — `heldByProvider` (leases per DID, every lease or those on
 * open bids only, plus what this provider runs and has pending that its own
 * latest presence does not say yet) and
 * `designatedOrders`. A buyer serves
 * `/c0mpute/claim/1` (its ClaimDesk feeds Buyer.run's open-order path); a
 * provider runs the Claimer.
 *
 * Not on an overlay with a steward: there every job is admitted before it is
 * announced and orders are refused (ORDERS_NOT_SUPPORTED), so an order heard
 * there can never run. Such a node keeps no open order (a member's orders hold
 * no provider's leases or designated count), serves no claim desk, and runs no
 * Claimer (which would spend its claim slots on them).
 */
import type { Job, Selection } from '../records/kinds.js';
import type { Opened } from '../records/envelope.js';
import { OpenOrders } from '../matching/open-orders.js';
import { Claimer, claimsPerBuyer, type ClaimMode } from '../roles/provider/claimer.js';
import { CLAIM_LIMITS, CLAIM_PROTOCOL, ClaimDesk, parseClaimAnswer } from '../roles/claim-protocol.js';
import type { ClaimInbox } from '../roles/buyer-orders.js';
import type { OverlayNode } from './overlay.js';

export interface OrdersWiring {
  orders: OpenOrders;
  desk: ClaimDesk | undefined;
  claimer: Claimer | undefined;
  /** The buyer's claim inbox for a job (Buyer.run's open-order path). */
  inbox(job: string): ClaimInbox;
}

export async function wireOrders(o: OverlayNode, opts: { claimMode: ClaimMode; skewMs: number }): Promise<OrdersWiring> {
  const orders = new OpenOrders({ skewMs: opts.skewMs });
  const takesOrders = !o.d.network.steward;
  const desk = o.buyer && takesOrders ? new ClaimDesk(o.clock, { onRateLimited: o.abuseReports.report }) : undefined;
  if (desk) await o.net.handle(CLAIM_PROTOCOL, desk.handler(), CLAIM_LIMITS);
  const pc = o.d.config.provider;
  const provider = o.provider;
  const claimer = provider && pc && takesOrders
    ? new Claimer({
        did: o.did,
        signer: o.d.identity.signer,
        clock: o.clock,
        log: o.log.child({ role: 'provider', overlay: o.name, mod: 'claimer' }),
        orders,
        advert: () => provider.advert,
        freeSlots: () => pc.slots - provider.running,
        runs: (job) => provider.runs(job),
        live: (now) => o.liveProviders(now),
        // what it would not quote for whatever the market (a workload it prices not, too large an input, params its
        // executor would refuse: bad-params) it does not claim either: the provider's own check, shared with its quotes
        canRun: (job) => provider.canTake(job),
        send: async (job, claim, advert) => {
          const frames = await o.net.request(job.signer, CLAIM_PROTOCOL, [{ t: 'claim', claim: claim.bytes, advert: advert.bytes }], { limits: CLAIM_LIMITS });
          const out = parseClaimAnswer(frames[0], job.signer, job.address, claim.address);
          // The buyer's signed word, kept: the selection we won, or its refusal.
          await o.records.put(out.won ? out.selection : out.refusal).catch(() => {});
          return out;
        },
        mode: opts.claimMode,
        maxPerBuyer: claimsPerBuyer(pc.slots),
        // a buyer it signed a receipt for (evidence at start, every receipt since): one without shares one bound with all
        knownBuyer: (did) => provider.budget.isKnownBuyer(did),
        // a buyer paused for an exec input that lapsed here gets no claim either, as it gets no offer (buyer-lapsed)
        paused: (did) => provider.budget.paused(did),
        skewMs: opts.skewMs,
      })
    : undefined;
  o.net.subscribe('job', (rec) => {
    const job = rec as Opened<Job>;
    if (takesOrders && job.record.order && orders.add(job, o.clock())) claimer?.changed();
  });
  o.net.subscribe('selection', (rec) => {
    const sel = rec as Opened<Selection>;
    // Only the buyer decides its order (a first-claim selection it signed); a selection heard before its job is
    // remembered, and the job is not taken as open when it comes (OpenOrders.selected).
    if (takesOrders && sel.record.policy === 'first-claim' && orders.selected(sel.record.job, sel.signer, o.clock())) claimer?.changed();
  });
  o.heldByProvider = (leases = 'all') => {
    const now = o.clock();
    const live = o.liveProviders(now);
    const held = orders.leasesHeld(now, live, leases);
    if (provider && pc) {
      // Its own presence (in its own view) already subtracted the jobs it ran and the claims it had pending when it
      // was signed: add only what that record does not say yet (a job started or a claim sent since). Others' running
      // jobs are not visible here; their presence's lower freeSlots says them.
      const freeNow = Math.max(0, pc.slots - provider.running - (claimer?.pending ?? 0));
      const me = live.find((p) => p.did === o.did);
      const mine = me ? Math.max(0, me.freeSlots - freeNow) : 0;
      if (mine > 0) held.set(o.did, (held.get(o.did) ?? 0) + mine);
    }
    return held;
  };
  o.designatedOrders = (did) => orders.designatedTo(did, o.clock());
  if (claimer) claimer.start();
  return {
    orders,
    desk,
    claimer,
    inbox: (job) => {
      if (!desk) throw new Error('no claim desk here (not a buyer, or an overlay with a steward)');
      return desk.inbox(job);
    },
  };
}
