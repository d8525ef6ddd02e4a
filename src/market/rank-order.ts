/**
 * The ranking order of a selection: candidate indices by total descending,
 * ties by DID ascending (spec: "Determinism"), exactly what sorting with
 * `compareRanked` gives, in linear time.
 *
 * Totals are finite and non-negative (non-negative weights over scores in
 * 0..1), and for such doubles the IEEE-754 bit pattern read as an unsigned
 * 64-bit integer orders exactly like the number. So the order is an LSD radix
 * sort on the inverted bits (inverted: descending), eight 8-bit digits, with a
 * digit skipped when every key shares it (the sign and most exponent bits of
 * totals in 0..1). Radix sorting is stable, so equal totals stay adjacent in
 * index order; each such run is then sorted by DID. No float is rounded or
 * quantised: two totals tie here exactly when they are equal numbers.
 *
 * Small inputs, a big-endian host, or a key outside the domain (negative, NaN,
 * infinite) take the comparator sort, which gives the same order.
 */

const SMALL = 128;
const LITTLE_ENDIAN = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f;

function byName(names: readonly string[]): (a: number, b: number) => number {
  return (a, b) => {
    const x = names[a]!;
    const y = names[b]!;
    return x < y ? -1 : x > y ? 1 : 0;
  };
}

/** Indices 0..n-1 sorted by a comparator (the small inputs, and the fallbacks). */
function sortedIndices(n: number, cmp: (a: number, b: number) => number): Uint32Array {
  const idx = new Uint32Array(n);
  for (let i = 0; i < n; i++) idx[i] = i;
  return idx.sort(cmp);
}

function comparatorOrder(keys: Float64Array, names: readonly string[], n: number): Uint32Array {
  const cmp = byName(names);
  return sortedIndices(n, (a, b) => keys[b]! - keys[a]! || cmp(a, b));
}

/**
 * Stable LSD radix sort of indices 0..n-1 by the unsigned 64-bit keys
 * (hi, lo), ascending, in eight 8-bit digits; a digit every key shares is
 * skipped. Returns the indices and the keys in that order (to find the runs of
 * equal keys).
 */
function radixOrder(lo: Uint32Array, hi: Uint32Array, n: number): { idx: Uint32Array; lo: Uint32Array; hi: Uint32Array } {
  let idx: Uint32Array = new Uint32Array(n);
  const hist = new Uint32Array(8 * 256);
  for (let i = 0; i < n; i++) {
    const l = lo[i]!;
    const h = hi[i]!;
    idx[i] = i;
    hist[l & 0xff]!++;
    hist[256 + ((l >>> 8) & 0xff)]!++;
    hist[512 + ((l >>> 16) & 0xff)]!++;
    hist[768 + (l >>> 24)]!++;
    hist[1024 + (h & 0xff)]!++;
    hist[1280 + ((h >>> 8) & 0xff)]!++;
    hist[1536 + ((h >>> 16) & 0xff)]!++;
    hist[1792 + (h >>> 24)]!++;
  }
  let lo2: Uint32Array = new Uint32Array(n);
  let hi2: Uint32Array = new Uint32Array(n);
  let idx2: Uint32Array = new Uint32Array(n);
  const pos = new Uint32Array(256);
  for (let d = 0; d < 8; d++) {
    const base = d * 256;
    // a digit every key shares does not reorder anything
    let skip = false;
    for (let b = 0; b < 256; b++) {
      const c = hist[base + b]!;
      if (c === n) skip = true;
      if (c !== 0) break;
    }
    if (skip) continue;
    let sum = 0;
    for (let b = 0; b < 256; b++) {
      pos[b] = sum;
      sum += hist[base + b]!;
    }
    const word = d < 4 ? lo : hi;
    const shift = (d & 3) * 8;
    for (let i = 0; i < n; i++) {
      const p = pos[(word[i]! >>> shift) & 0xff]!++;
      lo2[p] = lo[i]!;
      hi2[p] = hi[i]!;
      idx2[p] = idx[i]!;
    }
    [lo, lo2] = [lo2, lo];
    [hi, hi2] = [hi2, hi];
    [idx, idx2] = [idx2, idx];
  }
  return { idx, lo, hi };
}

/** Sort each run of equal keys by name (the runs are in index order: the radix sort is stable). */
function breakTies(r: { idx: Uint32Array; lo: Uint32Array; hi: Uint32Array }, names: readonly string[], n: number): Uint32Array {
  const { idx, lo, hi } = r;
  let cmp: ((a: number, b: number) => number) | undefined;
  for (let i = 0; i < n; ) {
    let j = i + 1;
    while (j < n && lo[j] === lo[i] && hi[j] === hi[i]) j++;
    if (j - i === 2) {
      // the common tie: a pair, swapped in place
      const a = idx[i]!;
      const b = idx[i + 1]!;
      if (names[b]! < names[a]!) {
        idx[i] = b;
        idx[i + 1] = a;
      }
    } else if (j - i > 2) idx.subarray(i, j).sort((cmp ??= byName(names)));
    i = j;
  }
  return idx;
}

/**
 * Indices 0..n-1 (n defaults to keys.length) ordered by `keys` descending,
 * then by `names` ascending (plain string order, as `compareRanked`).
 */
export function rankOrder(keys: Float64Array, names: readonly string[], n = keys.length): Uint32Array {
  if (n < SMALL || !LITTLE_ENDIAN) return comparatorOrder(keys, names, n);
  // The keys' words, inverted (descending); -0 is normalised to +0 first.
  const lo = new Uint32Array(n);
  const hi = new Uint32Array(n);
  const norm = new Float64Array(1);
  const w = new Uint32Array(norm.buffer);
  for (let i = 0; i < n; i++) {
    const k = keys[i]!;
    if (!(k >= 0 && k <= Number.MAX_VALUE)) return comparatorOrder(keys, names, n);
    norm[0] = k + 0;
    lo[i] = ~w[0]! >>> 0;
    hi[i] = ~w[1]! >>> 0;
  }
  return breakTies(radixOrder(lo, hi, n), names, n);
}

/** Characters of a name packed into one key after the common prefix: 7 × base 129 < 2^53, exact. */
const WINDOW = 7;
const TWO32 = 2 ** 32;

/**
 * Indices 0..n-1 of `names` in ascending string order (as `<`): what sorting
 * with a string comparator gives, without comparing most pairs. Past the
 * prefix every name shares (the `did:key:z6Mk` of Ed25519 DIDs), the next seven
 * characters are packed into an exact integer key (a character is its code + 1,
 * a name that has ended is 0, so "ab" sorts before "ab…"); the keys are radix
 * sorted and names whose seven characters tie are compared in full. Names with
 * a character above U+007F take the comparator sort (code-unit order is then
 * not worth packing).
 */
export function nameOrder(names: readonly string[], n = names.length): Uint32Array {
  if (n < SMALL) return comparatorNameOrder(names, n);
  const first = names[0]!;
  let lcp = first.length;
  for (let i = 1; i < n && lcp > 0; i++) {
    const s = names[i]!;
    const m = s.length < lcp ? s.length : lcp;
    let k = 0;
    while (k < m && s.charCodeAt(k) === first.charCodeAt(k)) k++;
    lcp = k;
  }
  const lo = new Uint32Array(n);
  const hi = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const s = names[i]!;
    let v = 0;
    for (let j = 0; j < WINDOW; j++) {
      const p = lcp + j;
      let c = 0;
      if (p < s.length) {
        c = s.charCodeAt(p) + 1;
        if (c > 128) return comparatorNameOrder(names, n);
      }
      v = v * 129 + c;
    }
    const h = Math.floor(v / TWO32);
    hi[i] = h;
    lo[i] = v - h * TWO32;
  }
  return breakTies(radixOrder(lo, hi, n), names, n);
}

function comparatorNameOrder(names: readonly string[], n: number): Uint32Array {
  return sortedIndices(n, byName(names));
}
