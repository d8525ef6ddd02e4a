/**
 * bench net (1)'s mesh, shared by the benches that build it (net.ts in one process, net-procs.ts one node per
 * process): who dials whom, and the raw baseline's topics. Light on purpose: a child process imports it without the
 * rest of the bench.
 */

/** The node degree the ring with chords aims at. */
export const DEGREE = 4;

/**
 * The bench advert names two workloads on two market shards, so it travels on two topics (docs/network.md §14); the
 * raw baseline travels on as many, and each node counts a record's first arrival, as the validated side does.
 */
export const RAW_TOPICS = ['/c0mpute/bench/raw', '/c0mpute/bench/raw/b'];

/** For each node, the nodes it dials: the next in a ring, plus random chords (a fixed seed), degree ≈ DEGREE. */
export function meshDials(n: number): number[][] {
  let rnd = 12345;
  const next = () => (rnd = (rnd * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const dials: number[][] = [];
  for (let i = 0; i < n; i++) {
    const out = [(i + 1) % n];
    for (let k = 0; k < DEGREE / 2 - 1; k++) {
      const j = Math.floor(next() * n);
      if (j !== i) out.push(j);
    }
    dials.push(out);
  }
  return dials;
}
