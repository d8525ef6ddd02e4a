/**
 * Who did a single job's work, as the steward learns it from a selection
 * (pool/1 §6.2; docs/overlays.md "Only the providers a selection named are
 * charged", docs/pools.md "A pool on a stewarded overlay"). Part of
 * src/roles/steward.ts.
 *
 * A selection's `considered` entries are text its signer wrote: the steward
 * does not take the winner's `provider` from there. It resolves the winning
 * offer itself (held: the offer came to the steward with its advert, or a
 * buyer kept it with its selection; else fetched by address over records/1
 * from the selection's signer or the named provider, who keep it), and then:
 *
 * - the offer must be for the selection's job and signed by the provider the
 *   selection names for it (else the selection is refused, nothing chosen:
 *   a buyer naming another DID there would have the real provider's receipts
 *   held aside, and preemption sent to the wrong party);
 * - its signer is who runs the job: the party the steward asks for usage, to
 *   stop, and for receipts at catch-up;
 * - when the advert the offer cites is a pool's (docs/pools.md: only the
 *   elected coordinator quotes, against its pooled advert), the job's receipts
 *   name the pool's DID (`receiptProviderFor`, src/pools/chain.ts), and the
 *   accounts charge a receipt naming that pool only when it cites that very
 *   offer and its chain proves its signer a member of that pool
 *   (`pooledReceiptFor`).
 *
 * An offer that can be found nowhere leaves the selection unresolved (the
 * accounts keep it aside and try again at each catch-up round); an advert that
 * can be found nowhere leaves the winner's pool unknown, resolved again when a
 * pooled receipt citing the offer comes.
 *
 * `remote: false` looks only at what is held here. The gossip handlers resolve
 * that way: the node hands records to its handlers one at a time, so a fetch
 * there (up to records/1's deadline per party, from a party a buyer chose)
 * would hold every record behind it; the accounts (and the reclaimer, for a
 * reclaimed claim's failover) fetch in the background, in shared bounded
 * slots (BackgroundFetches, src/roles/steward-accounts.ts).
 */
import type { Opened } from '../records/envelope.js';
import { T, type Advert, type Offer, type Receipt, type Selection } from '../records/kinds.js';
import { providerOf, receiptProviderFor } from '../pools/chain.js';

/** A winning offer the steward resolved: who signed it (runs the job) and, for a pool's offer, the pool its receipts name. */
export interface ChosenOffer {
  offer: string;
  /** The offer's signer: the provider doing the work (a pool's coordinator for a pooled offer). */
  provider: string;
  /** The advert the offer cites. */
  advert: string;
  /** The pool's DID when that advert is a pool's; absent when it is not, or could not be found (`advertKnown` false). */
  pool?: string;
  /** Whether the cited advert was found (its pool, if any, is then known). */
  advertKnown: boolean;
}

/** Why a selection's winner is refused (nothing chosen for it). */
export type WinnerRefusal = 'STEWARD_WINNER_NOT_CONSIDERED' | 'STEWARD_WINNER_WRONG_JOB' | 'STEWARD_WINNER_NOT_SIGNER';

export type Resolved = { chosen: ChosenOffer } | { refused: WinnerRefusal; detail: string } | { unresolved: string };

/** Where the steward finds an offer and an advert by address. */
export interface WinnerLookups {
  /** Held here (the record store, the market's offer book and advert index). */
  offer(address: string): Promise<Opened<Offer> | undefined>;
  advert(address: string): Promise<Opened<Advert> | undefined>;
  /** records/1 `get` from a party (absent: nothing fetched). The answer's bytes are checked against the address asked. */
  fetch?(from: string, address: string, type: string): Promise<Opened | undefined>;
}

export class WinnerResolver {
  constructor(private readonly l: WinnerLookups) {}

  /** The selection's winning offer, checked against what the selection says of it (see the module comment). */
  async resolve(s: Opened<Selection>, remote = true): Promise<Resolved> {
    const w = await this.winningOffer(s, remote);
    return 'offer' in w ? { chosen: await this.chosen(w.offer, [s.signer], remote) } : w;
  }

  /**
   * The selection's winning offer itself, checked as resolve() checks it, without looking for the advert it cites:
   * its signer is who runs the job (enough to ask it to stop, src/roles/steward-reclaim.ts onSelection).
   */
  async winningOffer(s: Opened<Selection>, remote = true): Promise<{ offer: Opened<Offer> } | Exclude<Resolved, { chosen: ChosenOffer }>> {
    const named = namedProvider(s);
    if (named === undefined) return { refused: 'STEWARD_WINNER_NOT_CONSIDERED', detail: 'the winner is not among the offers the selection considered' };
    const offer = (await this.l.offer(s.record.winner)) ?? (remote ? await this.#fetch([s.signer, named], s.record.winner, T.offer) : undefined);
    if (!offer || offer.type !== T.offer) return { unresolved: 'the winning offer is held nowhere the steward can reach' };
    if (offer.record.job !== s.record.job) return { refused: 'STEWARD_WINNER_WRONG_JOB', detail: 'the winning offer quotes another job' };
    if (offer.signer !== named) return { refused: 'STEWARD_WINNER_NOT_SIGNER', detail: `the selection names ${named} for an offer ${offer.signer} signed` };
    return { offer };
  }

  /** What a held winning offer stands for (the steward's own selection: its market holds the offer and its advert). */
  async chosen(offer: Opened<Offer>, askAlso: string[] = [], remote = true): Promise<ChosenOffer> {
    const advert = await this.#advert(offer.record.advert, remote ? [...askAlso, offer.signer] : []);
    return chosenOf(offer.address, offer.signer, offer.record.advert, advert);
  }

  /** A winner whose advert was not found when it was chosen: look again (a pooled receipt citing its offer came). */
  async again(c: ChosenOffer, askAlso: string[], remote = true): Promise<ChosenOffer> {
    if (c.advertKnown) return c;
    const advert = await this.#advert(c.advert, remote ? [...askAlso, c.provider] : []);
    return chosenOf(c.offer, c.provider, c.advert, advert);
  }

  async #advert(address: string, from: string[]): Promise<Opened<Advert> | undefined> {
    const a = (await this.l.advert(address)) ?? (from.length ? await this.#fetch(from, address, T.advert) : undefined);
    return a?.type === T.advert ? (a as Opened<Advert>) : undefined;
  }

  async #fetch<R>(from: string[], address: string, type: string): Promise<Opened<R> | undefined> {
    if (!this.l.fetch) return undefined;
    for (const did of new Set(from)) {
      const r = await this.l.fetch(did, address, type).catch(() => undefined);
      if (r && r.address === address && r.type === type) return r as Opened<R>;
    }
    return undefined;
  }
}

/**
 * The provider a selection names for its winning offer (its `considered` entry), or undefined when the winner is not
 * among them. A winner that resolves at all resolves to this DID: an offer signed by anyone else is refused.
 */
export function namedProvider(s: Opened<Selection>): string | undefined {
  return s.record.considered.find((c) => c.offer === s.record.winner)?.provider;
}

function chosenOf(offer: string, provider: string, advertAddress: string, advert: Opened<Advert> | undefined): ChosenOffer {
  if (!advert || advert.address !== advertAddress) return { offer, provider, advert: advertAddress, advertKnown: false };
  let party: string;
  try {
    party = receiptProviderFor(provider, advert);
  } catch {
    party = provider; // a pooled advert whose chain does not verify stands for no pool
  }
  return { offer, provider, advert: advertAddress, advertKnown: true, ...(party === provider ? {} : { pool: party }) };
}

/**
 * Whether `r` is the pool's receipt for the chosen offer: a pooled receipt citing that offer, naming the pool its
 * advert is a pool's of, whose chain (checked by the pools code, `providerOf`) proves its signer a member of it.
 * Any member may sign it (the coordinator that quoted, or one that closed its lost dispatch: docs/pools.md).
 */
export function pooledReceiptFor(r: Opened<Receipt>, c: ChosenOffer | undefined): boolean {
  if (!r.record.pool || !c?.pool || r.record.offer !== c.offer || r.record.provider !== c.pool) return false;
  try {
    return providerOf(r) === c.pool;
  } catch {
    return false;
  }
}
