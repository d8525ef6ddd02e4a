/**
 * Rotation across equally priced providers (spec/matching-and-leases.md
 * "Candidates on a quote": "each open-bid quote marks its first candidate as
 * picked, so successive quotes rotate across them"; docs/matching.md
 * "Candidates and the probe").
 *
 * Local to this node, persistent (a LevelDB sublevel through RotationStore)
 * and deterministic: a pick is marked with a monotonic counter, never a
 * wall-clock time, so the same sequence of picks gives the same state. The
 * candidates engine reads the marks (RotationView); `pick` advances them.
 */
import { C0Error } from '../errors.js';
import type { Sub } from '../store/db.js';
import type { RotationView } from './candidates.js';

/** Where the marks live: one entry per provider DID, its last pick's counter value. */
export interface RotationStore {
  load(): Promise<Array<[string, number]>>;
  save(did: string, mark: number): Promise<void>;
}

/** A store in memory (unit tests, offline probes). */
export function memoryRotationStore(init: Iterable<[string, number]> = []): RotationStore & { entries: Map<string, number> } {
  const entries = new Map(init);
  return {
    entries,
    load: async () => [...entries],
    save: async (did, mark) => void entries.set(did, mark),
  };
}

/** A store on a LevelDB sublevel: key the DID, value the mark as 8 bytes big-endian. */
export function levelRotationStore(db: Sub): RotationStore {
  return {
    async load() {
      const out: Array<[string, number]> = [];
      for await (const [k, v] of db.iterator()) {
        if (v.length !== 8) continue;
        out.push([k, Number(new DataView(v.buffer, v.byteOffset, 8).getBigUint64(0))]);
      }
      return out;
    },
    async save(did, mark) {
      const v = new Uint8Array(8);
      new DataView(v.buffer).setBigUint64(0, BigInt(mark));
      await db.put(did, v, { sync: true } as never);
    },
  };
}

export class Rotation implements RotationView {
  readonly #marks = new Map<string, number>();
  #counter = 0;
  /** serialises writes so marks land on disk in pick order */
  #chain: Promise<void> = Promise.resolve();

  private constructor(private readonly store: RotationStore) {}

  static async open(store: RotationStore): Promise<Rotation> {
    const r = new Rotation(store);
    for (const [did, mark] of await store.load()) {
      if (!Number.isSafeInteger(mark) || mark <= 0) continue;
      r.#marks.set(did, mark);
      if (mark > r.#counter) r.#counter = mark;
    }
    return r;
  }

  /** The mark of the provider's last pick; 0 when never picked (so it comes first among equals). */
  lastPicked(did: string): number {
    return this.#marks.get(did) ?? 0;
  }

  /** The counter's current value (the mark of the latest pick). */
  get counter(): number {
    return this.#counter;
  }

  /** Mark `did` as picked now: it goes to the back among equally priced providers. Resolves once stored. */
  pick(did: string): Promise<void> {
    if (typeof did !== 'string' || did === '') throw new C0Error('MATCH_BAD_INPUT', 'rotation: pick needs a provider DID', { field: 'did' });
    const mark = ++this.#counter;
    this.#marks.set(did, mark);
    const p = this.#chain.then(() => this.store.save(did, mark));
    this.#chain = p.catch(() => undefined);
    return p;
  }
}
