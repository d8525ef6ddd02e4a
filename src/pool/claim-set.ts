/**
 * The ids of the claims a ledger has released, exact and compact (src/pool/usage.ts).
 *
 * Why every id, for the life of the ledger: a claim id is unique in its ledger (pool/1 §6.4; a second `Admitted`
 * or `Released` of one id is an inconsistent stream wherever it lands), and a buyer may ask again for a job or a
 * gang run at any time (the steward answers STEWARD_ALREADY_RELEASED, synchronously, inside its admission
 * section), so no id stops mattering and a filter with false positives would refuse an honest claim. What is
 * saved is the form: a claim id that is a content address in canonical form (`sha256:` and 64 lowercase hex: every
 * claim a steward makes, a job's or a gang run's address) is held as its 32 digest bytes in an open-addressing
 * table, not as a 71-character string in a Set (~40-80 B a claim instead of ~120). Any other id (a ledger written
 * by hand or by a test) is held as given.
 */

const ADDR = /^sha256:[0-9a-f]{64}$/;
const WORDS = 8; // 32 bytes per digest
const MAX_LOAD = 0.8;

export class ClaimSet {
  /** capacity × 8 words; a slot of all-zero words is empty */
  #table = new Uint32Array(256 * WORDS);
  #mask = 255;
  #digests = 0;
  /** the all-zero digest, which an empty slot cannot stand for */
  #zero = false;
  readonly #other = new Set<string>();
  readonly #key = new Uint32Array(WORDS);

  get size(): number {
    return this.#digests + (this.#zero ? 1 : 0) + this.#other.size;
  }

  has(id: string): boolean {
    if (!this.#parse(id)) return this.#other.has(id);
    if (this.#isZero(this.#key)) return this.#zero;
    return this.#find(this.#table, this.#mask, this.#key) >= 0;
  }

  add(id: string): this {
    if (!this.#parse(id)) {
      this.#other.add(id);
      return this;
    }
    if (this.#isZero(this.#key)) {
      this.#zero = true;
      return this;
    }
    if (this.#find(this.#table, this.#mask, this.#key) >= 0) return this;
    if (this.#digests + 1 > (this.#mask + 1) * MAX_LOAD) this.#grow();
    this.#insert(this.#table, this.#mask, this.#key, 0);
    this.#digests++;
    return this;
  }

  /** Bytes held by the digest table (for docs/scale.md's figures and tests). */
  get tableBytes(): number {
    return this.#table.byteLength;
  }

  /** Parse a canonical address into #key; false for any other id. */
  #parse(id: string): boolean {
    if (id.length !== 71 || !ADDR.test(id)) return false;
    for (let w = 0; w < WORDS; w++) this.#key[w] = parseInt(id.slice(7 + w * 8, 15 + w * 8), 16) >>> 0;
    return true;
  }

  #isZero(t: Uint32Array, at = 0): boolean {
    for (let w = 0; w < WORDS; w++) if (t[at + w] !== 0) return false;
    return true;
  }

  /** The slot holding `key` (as words from `from`), or -1 (linear probing from the digest's first word: uniform). */
  #find(table: Uint32Array, mask: number, key: Uint32Array, from = 0): number {
    for (let i = key[from]! & mask; ; i = (i + 1) & mask) {
      const at = i * WORDS;
      if (this.#isZero(table, at)) return -1;
      let same = true;
      for (let w = 0; w < WORDS; w++) {
        if (table[at + w] !== key[from + w]) {
          same = false;
          break;
        }
      }
      if (same) return i;
    }
  }

  #insert(table: Uint32Array, mask: number, key: Uint32Array, from: number): void {
    let i = key[from]! & mask;
    while (!this.#isZero(table, i * WORDS)) i = (i + 1) & mask;
    table.set(key.subarray(from, from + WORDS), i * WORDS);
  }

  #grow(): void {
    const old = this.#table;
    const cap = (this.#mask + 1) * 2;
    const table = new Uint32Array(cap * WORDS);
    for (let at = 0; at < old.length; at += WORDS) if (!this.#isZero(old, at)) this.#insert(table, cap - 1, old, at);
    this.#table = table;
    this.#mask = cap - 1;
  }
}
