/**
 * A steward's UsageBook lives as long as its ledger (docs/pool.md: usage accrues over the life of a ledger), so what
 * it keeps must not grow by a list entry per claim, and a class-derived estimate (pool/1 §2.6) must not rescan the
 * whole history on every admission (s35b finding 1: ~470 B per job for ever, and an O(ledger) scan on the event loop).
 *
 * - the book's per-class evidence (src/pool/estimate.ts ClassEvidence) yields exactly the estimate the full scan of
 *   the observations did, for every history: random histories (classes, grades, figures, release order), compared
 *   with the old scan kept here as the reference;
 * - the duplicate and double-release refusals are unchanged (claim ids as addresses and as other names), also by
 *   replay;
 * - the book's retained heap per released claim is a few dozen bytes (the compact id set), not hundreds.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { C0Error } from '../../../src/errors.js';
import { ClaimSet, UsageBook, capGrade, deriveEstimate, isObserved, requiredCount, type Energy, type EstimateResult, type Observation, type PoolEvent } from '../../../src/pool/index.js';
import { replay, sealEntries } from '../../../src/ledger/index.js';
import { steward } from '../ledger/helpers.js';

/** The full scan as it was before the per-class evidence (src/pool/estimate.ts deriveEstimate + derive), verbatim. */
function referenceEstimate(cls: string, history: readonly Observation[], opts: { required?: number } = {}): EstimateResult {
  const required = requiredCount(opts.required);
  if (typeof cls !== 'string' || cls.trim().length === 0) throw new C0Error('POOL_ESTIMATE_EMPTY_CLASS', 'class');
  const obs = history.filter((o) => o.class === cls);
  let evidence = 0;
  let minUj = Number.MAX_SAFE_INTEGER;
  let maxUj = 0;
  let grade: Energy['grade'] = 'ModelBased';
  for (const o of obs) {
    if (!isObserved(o.actual.grade)) continue;
    evidence++;
    if (o.actual.uj < minUj) minUj = o.actual.uj;
    if (o.actual.uj > maxUj) maxUj = o.actual.uj;
    grade = capGrade(o.actual.grade, grade);
  }
  if (evidence < required) return { ok: false, class: cls, reason: 'INSUFFICIENT_EVIDENCE', seen: obs.length, evidence, required };
  return { ok: true, class: cls, estimate: { uj: maxUj, grade: capGrade(grade, 'ModelBased') }, spread: { minUj, maxUj, evidence, seen: obs.length } };
}

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    if (e instanceof C0Error) return e.code;
    throw e;
  }
  return undefined;
}

const addr = (i: number | string) => 'sha256:' + createHash('sha256').update(String(i)).digest('hex');
const grade = fc.constantFrom('HwShunt' as const, 'ModelBased' as const, 'Estimator' as const);
const CLASSES = ['a', 'b', 'train.small', ' ', ''];

describe('a class-derived estimate from the book’s per-class evidence (pool/1 §2.6)', () => {
  it('equals the full scan of the observations for random histories, classes, grades and release orders', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            cls: fc.option(fc.constantFrom(...CLASSES), { nil: undefined }),
            uj: fc.oneof(fc.integer({ min: 0, max: 1000 }), fc.constantFrom(0, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER - 1)),
            grade,
            releaseAt: fc.nat(),
            stays: fc.boolean(),
          }),
          { maxLength: 60 },
        ),
        fc.integer({ min: 0, max: 6 }),
        (claims, required) => {
          // each claim admitted in turn; its release lands at a random later point (or never: it stays open)
          const events: PoolEvent[] = [];
          const pending: Array<{ id: string; at: number; actual: Energy }> = [];
          claims.forEach((c, i) => {
            const id = i % 3 ? addr(i) : `claim-${i}`;
            events.push({ event: 'Admitted', claim: id, entitlement: `e${i}`, reserved: { uj: 1, grade: 'Estimator' }, devices: 0, borrowed_uj: 0, ...(c.cls === undefined ? {} : { class: c.cls }) });
            if (!c.stays || i % 5) pending.push({ id, at: events.length + (c.releaseAt % (claims.length + 1)), actual: { uj: c.uj, grade: c.grade } });
            for (const p of pending.filter((x) => x.at <= events.length)) {
              events.push({ event: 'Released', claim: p.id, actual: p.actual });
              pending.splice(pending.indexOf(p), 1);
            }
          });
          for (const p of pending) events.push({ event: 'Released', claim: p.id, actual: p.actual });
          const book = new UsageBook();
          const history: Observation[] = [];
          const classOf = new Map<string, string | undefined>();
          const compare = () => {
            for (const cls of [...CLASSES, 'never-seen']) {
              for (const req of [required, undefined, 0, 1]) {
                const opts = req === undefined ? {} : { required: req };
                const want = codeOf(() => referenceEstimate(cls, history, opts)) ?? referenceEstimate(cls, history, opts);
                const got = codeOf(() => book.estimate(cls, opts)) ?? book.estimate(cls, opts);
                assert.deepEqual(got, want, `class ${JSON.stringify(cls)}, required ${String(req)}`);
                // the pure function over a list (pool check, conformance) still answers the same
                assert.deepEqual(codeOf(() => deriveEstimate(cls, history, opts)) ?? deriveEstimate(cls, history, opts), want);
              }
            }
          };
          for (const ev of events) {
            book.apply(ev);
            if (ev.event === 'Admitted') classOf.set(ev.claim, ev.class);
            else {
              const cls = classOf.get(ev.claim);
              if (cls !== undefined) history.push({ class: cls, actual: ev.actual });
            }
          }
          compare();
          assert.equal(book.released.size, events.filter((e) => e.event === 'Released').length);
          assert.equal(book.classes.size, new Set(history.map((o) => o.class)).size, 'one aggregate per class released, nothing per claim');
        },
      ),
      { numRuns: 400 },
    );
  });

  it('a refused release changes no class evidence', () => {
    const book = new UsageBook();
    book.apply({ event: 'Admitted', claim: 'x', entitlement: 'e', class: 'k', reserved: { uj: 5, grade: 'HwShunt' }, devices: 0, borrowed_uj: 0 });
    assert.equal(codeOf(() => book.apply({ event: 'Released', claim: 'x', actual: { uj: -1, grade: 'HwShunt' } })), 'POOL_UJ_INVALID');
    assert.equal(book.classes.size, 0);
    book.apply({ event: 'Released', claim: 'x', actual: { uj: 7, grade: 'HwShunt' } });
    assert.equal(codeOf(() => book.apply({ event: 'Released', claim: 'x', actual: { uj: 9, grade: 'HwShunt' } })), 'LEDGER_RELEASE_TWICE');
    assert.deepEqual(book.classes.get('k'), { seen: 1, evidence: 1, minUj: 7, maxUj: 7, grade: 'ModelBased' });
  });
});

describe('claims ever admitted: duplicates refused as before, in a compact set', () => {
  it('refuses a second admission and a second release of address and non-address ids, live and by replay', () => {
    const ids = [addr(1), addr(2), 'r1', 'sha256:' + '0'.repeat(64), 'sha256:' + 'A'.repeat(64), 'sha256:' + 'a'.repeat(64)];
    const adm = (claim: string): PoolEvent => ({ event: 'Admitted', claim, entitlement: 'e', reserved: { uj: 1, grade: 'HwShunt' }, devices: 1, borrowed_uj: 0 });
    const rel = (claim: string): PoolEvent => ({ event: 'Released', claim, actual: { uj: 1, grade: 'HwShunt' } });
    const book = new UsageBook();
    for (const id of ids) {
      assert.equal(book.released.has(id), false);
      book.apply(adm(id));
      assert.equal(codeOf(() => book.apply(adm(id))), 'LEDGER_DUPLICATE_CLAIM');
      book.apply(rel(id));
      assert.equal(book.released.has(id), true);
      assert.equal(codeOf(() => book.apply(rel(id))), 'LEDGER_RELEASE_TWICE');
      assert.equal(codeOf(() => book.apply(adm(id))), 'LEDGER_DUPLICATE_CLAIM');
    }
    // 'A…' (not an address in canonical form) and 'a…' are different claims; so are neighbours of a stored digest
    assert.equal(book.released.has('sha256:' + 'b'.repeat(64)), false);
    assert.equal(book.released.has(addr(3)), false);
    assert.equal(book.released.size, ids.length);
    assert.equal(codeOf(() => book.apply(rel('ghost'))), 'LEDGER_RELEASE_UNKNOWN_CLAIM');
    // the same refusals at their index by replay
    const twice = replay(sealEntries([adm(addr(1)), rel(addr(1)), adm(addr(2)), adm(addr(1))], steward).map((e) => e.bytes));
    assert.deepEqual([twice.ok, twice.problem?.index, twice.problem?.code], [false, 3, 'LEDGER_DUPLICATE_CLAIM']);
    const again = replay(sealEntries([adm(addr(1)), rel(addr(1)), adm(addr(2)), rel(addr(1))], steward).map((e) => e.bytes));
    assert.deepEqual([again.ok, again.problem?.index, again.problem?.code], [false, 3, 'LEDGER_RELEASE_TWICE']);
  });

  it('ClaimSet answers exactly across growth (every id added is in, no other is)', () => {
    const s = new ClaimSet();
    for (let i = 0; i < 5000; i++) s.add(i % 7 ? addr(i) : `n-${i}`);
    s.add(addr(1)); // again: no second entry
    assert.equal(s.size, 5000);
    for (let i = 0; i < 5000; i++) assert.equal(s.has(i % 7 ? addr(i) : `n-${i}`), true, `id ${i}`);
    for (let i = 5000; i < 10000; i++) assert.equal(s.has(addr(i)) || s.has(`n-${i}`), false, `id ${i}`);
  });
});

describe('what the book keeps per released claim', () => {
  it('retains well under 100 B of heap per released claim (was ~270 B: an id string in a Set and an observation)', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const heap = () => {
      gc();
      gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers; // the compact id set is a typed array: off the JS heap, still memory
    };
    const N = 40_000;
    const base = heap();
    const book = new UsageBook();
    for (let i = 0; i < N; i++) {
      const id = addr(i); // as a decoded entry's string: garbage once applied, unless the book keeps it
      book.apply({ event: 'Admitted', claim: id, entitlement: 'team-a', class: i % 2 ? 'sha256-small' : 'train', reserved: { uj: 20_000_000, grade: 'Estimator' }, devices: 1, borrowed_uj: 0 });
      book.apply({ event: 'Released', claim: id, actual: { uj: 1_000_000 + (i % 1000), grade: i % 3 ? 'ModelBased' : 'Estimator' } });
    }
    const perClaim = (heap() - base) / N;
    assert.ok(book.released.has(addr(N - 1)));
    assert.ok(perClaim < 100, `${perClaim.toFixed(0)} B per released claim`);
    const d = book.estimate('sha256-small', { required: 3 });
    assert.equal(d.ok && d.spread.seen, N / 2);
  });
});
