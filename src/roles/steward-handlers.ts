/**
 * The steward's direct-protocol handlers besides admission (pool/1 §6, §7):
 * `/c0mpute/ledger/1` serves a range of the sealed ledger (at most
 * MAX_LEDGER_RANGE entries a request, for witnesses); on `/c0mpute/steward/1`,
 * `withdraw` releases an admitted job its buyer is done with (or takes a
 * queued one out of line, or marks one being decided), `select`
 * signs a selection on the buyer's behalf on a `managed` overlay, and
 * `reclaimed` tells a job's buyer whether the steward reclaimed its claim from
 * the provider it names.
 * Part of src/roles/steward.ts.
 */
import { C0Error } from '../errors.js';
import { T, type PolicyName } from '../records/kinds.js';
import { open } from '../records/envelope.js';
import { isDid } from '../records/did.js';
import type { CborValue } from '../records/cbor.js';
import { LEDGER_ERR, type Ledger } from '../ledger/store.js';
import type { Tree } from '../pool/tree.js';
import { requireEntitled, type AdmissionLine } from './steward-admission.js';
import type { ClaimAccounts, OpenJob } from './steward-accounts.js';
import type { Reclaimer } from './steward-reclaim.js';
import { MAX_LEDGER_RANGE, type StewardConfig, type StewardPorts, type StewardStream } from './steward-ports.js';

/** `/c0mpute/ledger/1`: the entries [from, to) of the ledger, at most MAX_LEDGER_RANGE of them. */
export async function serveLedgerRange(ledger: Ledger, frames: CborValue[], ctx: Pick<StewardStream, 'send'>): Promise<void> {
  const req = frames[0] as { from?: unknown; to?: unknown };
  // absent bounds are the whole ledger; present ones must be entry numbers (a wrong-typed one was read as absent)
  for (const k of ['from', 'to'] as const) {
    const v = req?.[k];
    if (v !== undefined && !(typeof v === 'number' && Number.isSafeInteger(v) && v >= 0)) throw new C0Error(LEDGER_ERR.RANGE, `${k} must be an entry number (a non-negative integer)`, { field: k });
  }
  const len = ledger.head().length;
  const from = typeof req?.from === 'number' ? req.from : 0;
  const to = Math.min(typeof req?.to === 'number' ? req.to : len, len, from + MAX_LEDGER_RANGE);
  if (from > len) throw new C0Error('LEDGER_RANGE_INVALID', `from ${from} is beyond the ledger's length ${len}`);
  for (const e of await ledger.entries(from, to)) await ctx.send(e);
}

/**
 * The buyer is done with an admitted job that will not complete (nobody
 * quoted, every attempt failed or refused): release it now with what its
 * receipts show, rather than holding the reservation and devices until the
 * deadline. Only the job's buyer may withdraw.
 *
 * A single job's receipts held aside (signed by a provider no selection heard
 * here named: the selection was missed, e.g. gossiped while the steward was
 * down) would be dropped by the release, so first `selectionsOf` asks the
 * buyer for the job's selections (the steward's catch-up request, bounded in
 * time); each goes through the steward's selection handler, which charges
 * what it names. A buyer that cannot be reached then leaves them uncharged.
 *
 * A claim not open (not admitted, or its `Admitted` entry not tracked yet)
 * goes to the admission line (`line`, AdmissionLine.withdraw): one waiting in
 * line is taken out of it (`dequeued`), one being decided is marked so the
 * decision leaves nothing admitted (`noted`). The answer `released` is `yes`
 * (released now), `dequeued`, `noted`, or `no` (the steward holds no such
 * claim: never admitted, released already, or unknown).
 */
export async function withdraw(accounts: ClaimAccounts, req: Record<string, unknown>, ctx: Pick<StewardStream, 'peer' | 'send'>, selectionsOf?: (oj: OpenJob) => Promise<void>, line?: Pick<AdmissionLine, 'withdraw' | 'withdrawnUnrun'>): Promise<void> {
  const claim = String(req.job);
  const { didFromPeerId } = await import('../node/peer-id.js');
  let from: string | undefined;
  try {
    from = didFromPeerId(ctx.peer.toString());
  } catch {
    // not an Ed25519 peer: nobody's buyer
  }
  // From here to the line's marks nothing waits: a claim leaves the line only once tracked as open, so it is found in one or the other.
  const oj = accounts.get(claim);
  if (!oj) {
    const r = line ? await line.withdraw(claim, from) : undefined;
    await ctx.send({ t: 'withdrawn', released: r ?? 'no' } as never);
    return;
  }
  if (from !== oj.buyer) throw new C0Error('STEWARD_NOT_BUYER', 'only the job’s buyer may withdraw it');
  // A gang's buyer hands over the member receipts it holds (signed by their providers), so the release sums them all even if gossip missed one.
  if (Array.isArray(req.receipts)) {
    for (const b of req.receipts.slice(0, 256)) {
      if (!(b instanceof Uint8Array)) continue;
      let r;
      try {
        r = open(b, T.receipt);
      } catch {
        continue;
      }
      await accounts.onReceipt(r);
    }
  }
  if (selectionsOf && oj.gang === undefined && (oj.aside?.size || oj.pending?.size)) await selectionsOf(oj);
  // nothing ran under it (no receipt charged): one of the buyer's claims withdrawn unrun. A receipt held aside proves
  // nothing (anyone can sign one for any job: second-round review s42 R8 F1, 869 rounds in 40 s), nor does a selection
  // alone: the buyer signs it, and its winning offer may be a throwaway key's (review s43 R1 F1: 200 rounds never
  // refused). A gang's too: no member receipt charged.
  if (oj.receipts.size === 0) line?.withdrawnUnrun(oj.buyer);
  await accounts.release(oj, 'withdrawn');
  await ctx.send({ t: 'withdrawn', released: 'yes' } as never);
}

export interface SelectDeps {
  ports: StewardPorts;
  ledger: Ledger;
  cfg: StewardConfig;
  accounts: ClaimAccounts;
  /** Who may claim under each entitlement (requireEntitled): the tree may have changed since the claim was admitted. */
  tree: Tree;
}

/** The most offers a `select` may carry (the buyer's collected offers for the job). */
export const MAX_SELECT_OFFERS = 32;

/** A managed overlay: the steward signs the selection for an admitted job on its buyer's behalf. */
export async function select(d: SelectDeps, req: Record<string, unknown>, ctx: Pick<StewardStream, 'peer' | 'send'>): Promise<void> {
  if (!d.cfg.managed) throw new C0Error('STEWARD_NOT_MANAGED', 'this overlay is not managed: buyers select themselves');
  const address = req.job as string;
  const job = await d.ports.records.get(address, T.job);
  if (!job) throw new C0Error('STEWARD_JOB_UNKNOWN', `the steward has not seen job ${String(address).slice(0, 80)}`);
  const { didFromPeerId } = await import('../node/peer-id.js');
  if (didFromPeerId(ctx.peer.toString()) !== job.signer) throw new C0Error('STEWARD_NOT_BUYER', 'only the job’s buyer may ask for its selection');
  const admitted = d.ledger.book.open.get(job.address);
  if (!admitted) throw new C0Error('STEWARD_NOT_ADMITTED', 'the job has no open admission');
  requireEntitled(d.tree, admitted.entitlement, job.signer);
  const policy = (req.policy as PolicyName) ?? 'balanced';
  const excluded = new Set(Array.isArray(req.excluded) ? (req.excluded as string[]) : []);
  const now = d.ports.clock();
  // The offers the buyer collected, each signed by its provider: the buyer's collection ends at the first offer sent
  // to it directly, and the copy gossiped to the steward can be a hop behind, so its book alone could hold none yet
  // (STEWARD_NO_CANDIDATE). Only offers for this job; one that does not open or fit is left out.
  if (Array.isArray(req.offers) && d.ports.market.addOffer) {
    for (const bytes of req.offers.slice(0, MAX_SELECT_OFFERS)) {
      if (!(bytes instanceof Uint8Array)) continue;
      try {
        const o = open(bytes, T.offer);
        if (o.record.job === job.address) await d.ports.market.addOffer(o, now);
      } catch {
        // not an offer this steward takes: decided without it
      }
    }
  }
  // decided afresh without the providers tried, so the selection recomputes to its winner
  const decision = await d.ports.market.decide(job, policy, now, excluded);
  const cand = decision.ranked[0];
  if (!cand) throw new C0Error('STEWARD_NO_CANDIDATE', 'no eligible offer left for this job');
  const sel = d.ports.market.signSelection(job, decision, cand, now);
  const oj = d.accounts.get(job.address);
  // charged whatever happens to the answer (a receipt it signed held aside is charged now)
  if (oj) await d.accounts.chooseOffer(oj, cand.offer).catch((e) => d.ports.log.warn({ claim: oj.claim, provider: cand.provider, err: (e as Error).message }, 'charging the receipts held aside for a chosen provider failed'));
  await ctx.send({ t: 'selection', selection: sel.bytes, offer: cand.offer.bytes } as never);
}

export interface ReclaimedDeps {
  accounts: Pick<ClaimAccounts, 'get'>;
  reclaim: Pick<Reclaimer, 'reclaimedAs' | 'stopAsked'>;
  /** The claim a job is charged to: its gang's, or its own. */
  claimOf: (job: string) => string;
  /** The signer of a job record the steward holds (its buyer), if it holds it. */
  jobSigner: (job: string) => Promise<string | undefined>;
}

/**
 * `reclaimed`: did the steward reclaim the claim of `job` from `provider`? Asked by the job's buyer when a provider
 * refuses the exec EXEC_PREEMPTED or EXEC_IDLE_RECLAIMED, or ends it with a failed receipt coded so: the provider's
 * word alone proves nothing (it would end the buyer's job with no non-delivery and no failover). `provider` (a DID,
 * optional) names the provider whose refusal or receipt the buyer checks. Answers `{t: 'reclaimed', reclaimed}`:
 * `priority` or `idle` when the steward asked that provider to stop the claim (Reclaimer.stopAsked: from before the
 * `stop` goes out until the claim's deadline, whether it asked the claim's provider or, the claim reclaimed already, a
 * failover's provider its buyer selected afterwards; kept on disk, an open claim's as its stop marks, a released one's
 * in its reclaimed note, so a restart answers the same); without `provider` (a buyer before the field), when it asked
 * any provider to stop the claim, as before. `no` while the claim is open or reclaimed but the provider named was not
 * asked (or, without `provider`, nobody was), `closed` when the claim is neither open nor reclaimed (released for
 * another reason: the buyer does not take that as a reclaim). So a provider a buyer failed over to cannot pass off a
 * refusal as the reclaim the steward asked another provider for. Only the job's buyer is answered
 * (`STEWARD_NOT_BUYER`); a `provider` that is not a DID is refused `STEWARD_BAD_REQUEST`.
 */
export async function reclaimed(d: ReclaimedDeps, req: Record<string, unknown>, ctx: Pick<StewardStream, 'peer' | 'send'>): Promise<void> {
  if (typeof req.job !== 'string' || !req.job) throw new C0Error('STEWARD_BAD_REQUEST', 'reclaimed: job must be a job address', { field: 'job' });
  const provider = req.provider;
  if (provider !== undefined && !isDid(provider)) throw new C0Error('STEWARD_BAD_REQUEST', 'reclaimed: provider must be the DID of the provider whose refusal or receipt is checked', { field: 'provider' });
  const claim = d.claimOf(req.job);
  const asked = d.reclaim.reclaimedAs(claim);
  const oj = d.accounts.get(claim);
  const buyer = asked?.buyer ?? oj?.buyer ?? (await d.jobSigner(req.job));
  const { didFromPeerId } = await import('../node/peer-id.js');
  if (buyer !== undefined && didFromPeerId(ctx.peer.toString()) !== buyer) throw new C0Error('STEWARD_NOT_BUYER', 'only the job’s buyer may ask whether its claim was reclaimed');
  const confirmed = asked && (provider === undefined || d.reclaim.stopAsked(claim, provider));
  await ctx.send({ t: 'reclaimed', reclaimed: confirmed ? asked.reason : asked || oj ? 'no' : 'closed' } as never);
}
