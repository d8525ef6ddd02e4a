/**
 * `node dist/scripts/sim/prof.js DIR [--top 25]` (issue #16; docs/scale.md
 * "Where the hundred-node run's CPU went"): summarises the CPU profiles that
 * `npm run sim -- --prof DIR` (or `bench idle --prof=DIR`) wrote — self time
 * by function and by module (an npm package, a file of ours, node internals),
 * and inclusive time by module (a sample counts once for every module on its
 * stack), each as a share of the busy samples (idle excluded).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** The module a frame belongs to: `pkg:<npm package>`, `ours:<path under src/ or scripts/>`, `node:<internal>`, or a V8 pseudo-frame. */
export function moduleOf(f: CallFrame): string {
  const u = f.url;
  if (!u) return f.functionName.startsWith('(') ? f.functionName : '(native)';
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = u.slice(nm + 14).split('/');
    return `pkg:${rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  const d = u.indexOf('/dist/');
  if (d >= 0) return `ours:${u.slice(d + 6).replace(/\.js$/, '')}`;
  if (u.startsWith('node:')) return u;
  return u.replace(/^file:\/\//, '');
}

const fnKey = (f: CallFrame) => `${f.functionName || '(anonymous)'} ${moduleOf(f)}:${f.lineNumber + 1}`;

export interface ProfSummary {
  /** busy ms (all samples but (idle)) and total ms profiled, summed over the profiles */
  busyMs: number;
  totalMs: number;
  selfByFunction: Array<{ key: string; ms: number }>;
  selfByModule: Array<{ key: string; ms: number }>;
  inclusiveByModule: Array<{ key: string; ms: number }>;
  inclusiveByFunction: Array<{ key: string; ms: number }>;
}

export function summarise(profiles: CpuProfile[]): ProfSummary {
  const selfF = new Map<string, number>();
  const selfM = new Map<string, number>();
  const incM = new Map<string, number>();
  const incF = new Map<string, number>();
  let busy = 0;
  let total = 0;
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  for (const p of profiles) {
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const stackMods = new Map<number, Set<string>>();
    const stackFns = new Map<number, Set<string>>();
    const fnsOf = (id: number): Set<string> => {
      let s = stackFns.get(id);
      if (s) return s;
      const up = parent.get(id);
      s = new Set(up === undefined ? [] : fnsOf(up));
      s.add(fnKey(byId.get(id)!.callFrame));
      stackFns.set(id, s);
      return s;
    };
    const modsOf = (id: number): Set<string> => {
      let s = stackMods.get(id);
      if (s) return s;
      const up = parent.get(id);
      s = new Set(up === undefined ? [] : modsOf(up));
      s.add(moduleOf(byId.get(id)!.callFrame));
      stackMods.set(id, s);
      return s;
    };
    for (let i = 0; i < p.samples.length; i++) {
      const ms = (p.timeDeltas[i + 1] ?? p.timeDeltas[i] ?? 0) / 1000;
      const n = byId.get(p.samples[i]!)!;
      total += ms;
      if (n.callFrame.functionName === '(idle)') continue;
      busy += ms;
      const f = n.callFrame;
      const mod = moduleOf(f);
      add(selfF, fnKey(f), ms);
      add(selfM, mod, ms);
      for (const m of modsOf(n.id)) add(incM, m, ms);
      for (const k of fnsOf(n.id)) add(incF, k, ms);
    }
  }
  const sorted = (m: Map<string, number>) => [...m].map(([key, ms]) => ({ key, ms })).sort((a, b) => b.ms - a.ms);
  return { busyMs: busy, totalMs: total, selfByFunction: sorted(selfF), selfByModule: sorted(selfM), inclusiveByModule: sorted(incM), inclusiveByFunction: sorted(incF) };
}

export function formatSummary(s: ProfSummary, top = 25): string {
  const pct = (ms: number) => `${((100 * ms) / s.busyMs).toFixed(1).padStart(5)} %`;
  const L = [`busy ${(s.busyMs / 1000).toFixed(1)} s of ${(s.totalMs / 1000).toFixed(1)} s profiled (shares below are of the busy time)`];
  for (const [title, rows] of [
    ['self time by function', s.selfByFunction],
    ['self time by module', s.selfByModule],
    ['inclusive time by module', s.inclusiveByModule],
    ['inclusive time by function', s.inclusiveByFunction],
  ] as const) {
    L.push(`-- ${title}`);
    for (const r of rows.slice(0, top)) L.push(`${pct(r.ms)}  ${r.key}`);
  }
  return L.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dir = process.argv[2];
  if (!dir) {
    console.error('usage: node dist/scripts/sim/prof.js DIR [--top N]');
    process.exit(2);
  }
  const t = process.argv.indexOf('--top');
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const profiles = files.map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as CpuProfile);
  console.log(`${files.length} profiles in ${dir}`);
  console.log(formatSummary(summarise(profiles), t > 0 ? Number(process.argv[t + 1]) : 25));
}
