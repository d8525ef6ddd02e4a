/**
 * `npm run bench -- [suite …]`: runs the named suites (default: all) and prints
 * each suite's figures and its targets as ratios against in-run baselines.
 * Exit code 0 even when a target is missed (a benchmark reports; it does not gate).
 *
 * Several suites each run in a process of their own, one after another: a suite
 * leaves a large heap, worker threads and JIT feedback behind, and the next
 * suite's figures should not depend on which ran before it.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import '../../src/polyfill.js';
import type { BenchResult } from './lib.js';

const suites: Record<string, () => Promise<BenchResult>> = {
  records: async () => (await import('./records.js')).run(),
  pool: async () => (await import('./pool.js')).run(),
  pools: async () => (await import('./pools.js')).run(),
  'pool-figures': async () => (await import('./pool-figures.js')).run(),
  store: async () => (await import('./store.js')).run(),
  market: async () => (await import('./market.js')).run(),
  reputation: async () => (await import('./reputation.js')).run(),
  history: async () => (await import('./history.js')).run(),
  matching: async () => {
    const a = await (await import('./matching-probe.js')).run();
    const b = await (await import('./batch-plan.js')).run();
    const c = await (await import('./leases.js')).run();
    const d = await (await import('./orders.js')).run();
    return { report: `${a.report}\n\n${b.report}\n\n${c.report}\n\n${d.report}`, targets: [...a.targets, ...b.targets, ...c.targets, ...d.targets] };
  },
  training: async () => (await import('./training.js')).run(),
  console: async () => (await import('./console.js')).run(),
  idle: async () => (await import('./idle.js')).run(),
  copies: async () => (await import('./copies.js')).run(),
  opens: async () => (await import('./opens.js')).run(),
  net: async () => {
    const a = await (await import('./net.js')).run();
    const b = await (await import('./walk.js')).run();
    const x = await (await import('./exec-abuse.js')).run();
    return { report: `${a.report}\n\n${b.report}\n\n${x.report}`, targets: [...a.targets, ...b.targets, ...x.targets] };
  },
  'slow-link': async () => (await import('./slow-link.js')).run(),
  startup: async () => (await import('./startup.js')).run(),
};

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const usage = `usage: npm run bench -- [suite …] [--name=value …]\nsuites (default: all, each in a process of its own): ${Object.keys(suites).join(', ')}\na suite's own knobs are --name=value (for example idle's --nodes=20 --windowMs=30000, opens' --perDialler=…)`;
  if (args.includes('--help') || args.includes('-h')) {
    console.log(usage);
    return;
  }
  // a flag without "=value" is a typo or a wrong guess at a knob: stop before minutes of benches run on the defaults
  const bare = args.filter((a) => a.startsWith('-') && !/^--[A-Za-z][\w-]*=/.test(a));
  if (bare.length) {
    console.error(`unknown option ${bare.join(' ')}; a suite's knobs are written --name=value\n${usage}`);
    process.exit(2);
  }
  const wanted = args.filter((a) => !a.startsWith('-'));
  const names = wanted.length ? wanted : Object.keys(suites);
  for (const n of names) {
    if (!suites[n]) {
      console.error(`unknown bench suite "${n}"; known: ${Object.keys(suites).join(', ')}`);
      process.exit(2);
    }
  }
  if (names.length > 1) {
    for (const n of names) {
      const r = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), n, ...args.filter((a) => a.startsWith('--'))], { stdio: 'inherit' });
      if (r.status !== 0) console.error(`bench suite ${n} exited with ${r.status ?? r.signal}`);
    }
    return;
  }
  for (const n of names) {
    const s = suites[n]!;
    console.log(`\n== bench: ${n} (node ${process.version}, ${new Date().toISOString()})`);
    const r = await s();
    console.log(r.report);
    for (const t of r.targets) console.log(`target ${t.name}: ${t.ratio.toFixed(3)} (want ${t.target}) ${t.met ? 'MET' : 'MISSED'}`);
  }
}

await main();
