/**
 * Mutation check of the pool/1 engine (issue 11; spec pool-v0.1 §7).
 *
 * Applies each named mutant below (a textual replacement in src/pool/*.ts or
 * src/ledger/replay.ts), compiles the mutated file, and runs the pool and
 * ledger unit tests against it in a scratch copy of dist/. A mutant is
 * *killed* when some test fails (or the run times out), *survived* when every
 * test passes. A mutant whose search text is no longer in the source is
 * reported *stale* (the list must follow the code). Exit 1 when any mutant
 * survives or is stale.
 *
 *   npm run mutation                 every mutant
 *   npm run mutation -- share-ceil   only mutants whose name contains a filter
 *
 * How a mutant is compiled: the scratch dist/ is the project's own build; the
 * mutated .ts file alone is re-emitted with TypeScript's transpileModule (the
 * same compiler, no type check: a mutant is a runtime change), replacing its
 * .js there. The source tree is never written.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import ts from 'typescript';

interface Mutant {
  name: string;
  file: string;
  /** [search, replacement] pairs; each search must occur exactly once */
  edits: Array<[string, string]>;
  /** the issue-11 item this mutant stands for, when it is one */
  issue?: string;
}

const SHARE_DIV = 'return (siblingsG * BigInt(e.over_quota_weight)) / W;';
const SIBLINGS_G = 'const siblingsG = BigInt((this.tree.guaranteeSum.get(e.parent) ?? 0) - e.guarantee_uj);';
const ROOT_GUARD = 'if (e.parent === undefined) return 0n; // surplus never crosses roots';

export const MUTANTS: Mutant[] = [
  // ---- the issue's items ----
  { name: 'share-ceil', issue: '§7.2 rounds the share down', file: 'src/pool/admission.ts', edits: [[SHARE_DIV, 'return (siblingsG * BigInt(e.over_quota_weight) + W - 1n) / W;']] },
  {
    name: 'roots-are-siblings',
    issue: '§7.2 surplus never crosses roots',
    file: 'src/pool/admission.ts',
    edits: [
      [
        ROOT_GUARD,
        'if (e.parent === undefined) { let g = 0; let w = 0; for (const r of this.tree.entitlements.values()) if (r.parent === undefined) { g += r.guarantee_uj; w += r.over_quota_weight; } return w === 0 ? 0n : (BigInt(g - e.guarantee_uj) * BigInt(e.over_quota_weight)) / BigInt(w); }',
      ],
    ],
  },
  {
    name: 'cousins-are-siblings',
    issue: '§7.2 surplus stays under one parent (three levels)',
    file: 'src/pool/admission.ts',
    edits: [
      [
        SIBLINGS_G,
        'const gp = this.tree.entitlements.get(e.parent)!.parent; const cousins = gp === undefined ? [] : [...this.tree.entitlements.values()].filter((x) => x.parent !== undefined && this.tree.entitlements.get(x.parent)!.parent === gp); const siblingsG = BigInt((gp === undefined ? (this.tree.guaranteeSum.get(e.parent) ?? 0) : cousins.reduce((s, x) => s + x.guarantee_uj, 0)) - e.guarantee_uj);',
      ],
    ],
  },
  { name: 'lent-twice', issue: '§7.2 surplus already lent is not lent twice', file: 'src/pool/admission.ts', edits: [['- (a.borrowed - pos(used - e.guarantee_uj))', '']] },
  {
    name: 'share-from-current-unspent',
    issue: '§2.2 the share does not depend on arrival order',
    file: 'src/pool/admission.ts',
    edits: [[SIBLINGS_G, 'const ag = this.#agg.get(e.parent) ?? { unspent: 0, borrowed: 0 }; const siblingsG = BigInt(ag.unspent - pos(e.guarantee_uj - this.book.usage(e.id).usedUj));']],
  },
  {
    name: 'derive-before-verify',
    issue: '§7.10 verify before derive',
    file: 'src/ledger/replay.ts',
    edits: [
      ['  // Pass 1: authenticity and sequence of every entry.\n', '  const early = new UsageBook();\n'],
      [
        '    records.push(rec);\n  }\n',
        "    records.push(rec);\n    try { early.apply(eventOf(rec)); } catch (e) { if (!(e instanceof C0Error)) throw e; return fail(i, e.code, `entry ${i}: ${e.message}`, 'consistency'); }\n  }\n",
      ],
    ],
  },
  // ---- admission (§4) ----
  { name: 'share-excludes-nothing', file: 'src/pool/admission.ts', edits: [[SIBLINGS_G, 'const siblingsG = BigInt(this.tree.guaranteeSum.get(e.parent) ?? 0);']] },
  { name: 'share-own-weight-not-in-sum', file: 'src/pool/admission.ts', edits: [['const W = BigInt(this.tree.weightSum.get(e.parent) ?? 0);', 'const W = BigInt((this.tree.weightSum.get(e.parent) ?? 0) - e.over_quota_weight);']] },
  { name: 'share-boundary', file: 'src/pool/admission.ts', edits: [['BigInt(borrowedAfter) > this.#share(ent)', 'BigInt(borrowedAfter) >= this.#share(ent)']] },
  { name: 'share-not-cumulative', file: 'src/pool/admission.ts', edits: [['BigInt(borrowedAfter) > this.#share(ent)', 'BigInt(borrowed) > this.#share(ent)']] },
  { name: 'no-max-share-deny', file: 'src/pool/admission.ts', edits: [["deny.push('EXCEEDS_MAX_SHARE')", 'void 0']] },
  { name: 'devices-held-boundary', file: 'src/pool/admission.ts', edits: [['u.heldDevices + devices > ent.guarantee_devices', 'u.heldDevices + devices >= ent.guarantee_devices']] },
  { name: 'devices-not-denied', file: 'src/pool/admission.ts', edits: [["if (devices > e.guarantee_devices) deny.push('DEVICES_EXCEED_GUARANTEE');", '']] },
  { name: 'guarantee-boundary', file: 'src/pool/admission.ts', edits: [['if (after > ent.guarantee_uj) {', 'if (after >= ent.guarantee_uj) {']] },
  { name: 'estimator-borrows', file: 'src/pool/admission.ts', edits: [["if (!isObserved(est.grade)) queue.push('GUARANTEE_EXHAUSTED_UNOBSERVED');", '']] },
  { name: 'estimator-queued-not-denied', file: 'src/pool/admission.ts', edits: [["if (!isObserved(est.grade)) deny.push('UNOBSERVED_EXCEEDS_GUARANTEE');", '']] },
  { name: 'weight-zero-borrows', file: 'src/pool/admission.ts', edits: [["if (ent.over_quota_weight === 0) queue.push('GUARANTEE_EXHAUSTED_NO_WEIGHT');", '']] },
  { name: 'limit-boundary', file: 'src/pool/admission.ts', edits: [['ent.limit_uj !== undefined && after > ent.limit_uj', 'ent.limit_uj !== undefined && after >= ent.limit_uj']] },
  { name: 'queue-before-deny', file: 'src/pool/admission.ts', edits: [['if (e && deny.length === 0) {', 'if (e && deny.length === 0 && this.book.usage(e.id).heldDevices === 0) {']] },
  // ---- usage (§6.2) ----
  { name: 'release-adds-actual', file: 'src/pool/usage.ts', edits: [['usedUj: before.usedUj - o.reserved.uj + ev.actual.uj', 'usedUj: before.usedUj + ev.actual.uj']] },
  { name: 'release-keeps-devices', file: 'src/pool/usage.ts', edits: [['heldDevices: before.heldDevices - o.devices', 'heldDevices: before.heldDevices']] },
  // ---- preemption (§5) ----
  { name: 'undefined-cost-first', file: 'src/pool/preemption.ts', edits: [['return a.cost.defined ? -1 : 1; // evidence before declaration', 'return a.cost.defined ? 1 : -1;']] },
  { name: 'cheapest-first', file: 'src/pool/preemption.ts', edits: [['const c = compareCost(b.cost, a.cost); // most expensive first', 'const c = compareCost(a.cost, b.cost);']] },
  { name: 'zero-units-is-zero-cost', file: 'src/pool/preemption.ts', edits: [['return completedUnits === 0 ? { defined: false, spentUj }', 'return completedUnits === 0 ? { defined: true, spentUj, units: 1 }']] },
  // ---- grades, idle (§2.5, §2.7) ----
  { name: 'division-keeps-hwshunt', file: 'src/pool/grades.ts', edits: [["if (occupants >= 2 && g === 'HwShunt') return 'ModelBased';", '']] },
  {
    name: 'idle-threshold-before-grade',
    file: 'src/pool/idle.ts',
    edits: [["  if (!isObserved(obs.energy.grade)) return { verdict: 'no-verdict', key, reason: 'UNOBSERVED_GRADE', windowMs };\n", '']],
  },
  { name: 'empty-window-is-zero-rate', file: 'src/pool/idle.ts', edits: [["if (obs.observedMs === 0) return { verdict: 'no-verdict', key, reason: 'EMPTY_WINDOW', windowMs };", '']] },
  // ---- replay (§6.4–§6.5) ----
  { name: 'replay-skips-link', file: 'src/ledger/replay.ts', edits: [['if (rec.prev !== prev) return fail(', 'if (rec.prev !== prev && false) return fail(']] },
  { name: 'replay-skips-steward', file: 'src/ledger/replay.ts', edits: [['if (signer !== steward) return fail(', 'if (signer !== steward && false) return fail(']] },
  { name: 'replay-skips-seq', file: 'src/ledger/replay.ts', edits: [['if (rec.seq !== i) return fail(', 'if (rec.seq !== i && false) return fail(']] },
];

function apply(src: string, m: Mutant): string | undefined {
  let s = src;
  for (const [from, to] of m.edits) {
    const at = s.indexOf(from);
    if (at < 0 || s.indexOf(from, at + 1) >= 0) return undefined;
    s = s.slice(0, at) + to + s.slice(at + from.length);
  }
  return s;
}

function testFiles(dist: string): string[] {
  const out: string[] = [];
  for (const d of ['test/unit/pool', 'test/unit/ledger']) {
    const dir = join(dist, d);
    for (const f of readdirSync(dir)) if (f.endsWith('.test.js') && statSync(join(dir, f)).isFile()) out.push(join(dir, f));
  }
  return out.sort();
}

function runTests(root: string, files: string[]): { pass: boolean; timedOut: boolean; failed: string[] } {
  const r = spawnSync(process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=tap', ...files], { cwd: root, encoding: 'utf8', timeout: 180_000, env: { ...process.env, C0MPUTE_TEST: '1' } });
  const failed = [...(r.stdout ?? '').matchAll(/^\s*not ok \d+ - (.*)$/gm)].map((x) => x[1]!);
  if (r.status !== 0 && failed.length === 0) failed.push(`exit ${r.status}: ${((r.stderr ?? '') + (r.stdout ?? '')).trim().split('\n').slice(-3).join(' / ')}`);
  return { pass: r.status === 0, timedOut: r.error !== undefined, failed };
}

/** ES modules, as tsc emits them for this package ("type": "module"). */
function emit(source: string, fileName: string): { js: string; errors: number } {
  const t = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true }, fileName, reportDiagnostics: true });
  return { js: t.outputText, errors: (t.diagnostics ?? []).length };
}

function main(): number {
  const root = new URL('../../..', import.meta.url).pathname; // dist/scripts/mutation → repo
  const filters = process.argv.slice(2);
  const chosen = MUTANTS.filter((m) => filters.length === 0 || filters.some((f) => m.name.includes(f)));
  const work = mkdtempSync(join(tmpdir(), 'c0mpute-mutation-'));
  try {
    cpSync(join(root, 'dist'), join(work, 'dist'), { recursive: true });
    cpSync(join(root, 'package.json'), join(work, 'package.json'));
    symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'));
    const files = testFiles(join(work, 'dist'));
    // baseline: every file the mutants touch, re-emitted unmutated the way mutants are, must pass
    for (const f of new Set(chosen.map((m) => m.file))) writeFileSync(join(work, 'dist', f.replace(/\.ts$/, '.js')), emit(readFileSync(join(root, f), 'utf8'), join(root, f)).js);
    const base = runTests(work, files);
    if (!base.pass) {
      process.stderr.write(`baseline: the unmutated tests fail (${base.failed.join('; ')}); run tsc and fix them first\n`);
      return 1;
    }
        const rows: Array<{ m: Mutant; result: string }> = [];
    for (const m of chosen) {
      const srcPath = join(root, m.file);
      const jsPath = join(work, 'dist', m.file.replace(/\.ts$/, '.js'));
      const original = readFileSync(jsPath);
      const mutated = apply(readFileSync(srcPath, 'utf8'), m);
      let result: string;
      if (mutated === undefined) result = 'STALE (search text not found exactly once)';
      else {
        const t = emit(mutated, srcPath);
        if (t.errors > 0) result = 'killed (does not compile)';
        else {
          writeFileSync(jsPath, t.js);
          const r = runTests(work, files);
          result = r.pass ? 'SURVIVED' : r.timedOut ? 'killed (timeout)' : `killed by ${r.failed.length} test(s): ${r.failed.slice(0, 2).join(' | ')}`;
          writeFileSync(jsPath, original);
        }
      }
      rows.push({ m, result });
      process.stdout.write(`${m.name.padEnd(30)} ${result}${m.issue ? `   [issue 11: ${m.issue}]` : ''}\n`);
    }
    const bad = rows.filter((r) => r.result.startsWith('SURVIVED') || r.result.startsWith('STALE'));
    process.stdout.write(`\n${rows.length - bad.length} of ${rows.length} mutants killed; ${bad.length} survived or stale${bad.length ? `: ${bad.map((r) => r.m.name).join(', ')}` : ''}\n`);
    return bad.length === 0 ? 0 : 1;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

process.exitCode = main();
