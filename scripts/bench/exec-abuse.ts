/**
 * `/c0mpute/exec/1` under abuse (issue #10, "Direct streams with bounded
 * memory"; docs/network.md "Direct streams: limits and framing"). The patterns
 * an attacker without valid records can throw at a provider, as functions the
 * end-to-end test (test/e2e/exec-streams.test.ts) and `npm run bench -- net`
 * share, and the bench itself: a real provider daemon's RSS (VmRSS from
 * /proc/<pid>/status) idle and at its peak under the patterns, as a ratio.
 */
import { readFileSync } from 'node:fs';
import type { Libp2p, PeerId, Stream } from '@libp2p/interface';
import type { Multiaddr } from '@multiformats/multiaddr';
import { multiaddr } from '@multiformats/multiaddr';
import { lpStream } from '@libp2p/utils';
import { decodeCanonical, encodeCanonical, type CborValue } from '../../src/records/cbor.js';
import { EXEC_PROTOCOL } from '../../src/roles/exec-protocol.js';
import type { BenchResult } from './lib.js';
import { table } from './lib.js';

type Target = PeerId | Multiaddr;

/** A process's resident set, MiB (Linux). */
export function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) / 1024;
}

/** The code a provider answered on a stream: an error frame [2, code, …] or a data frame {t:'refused', code}. */
function codeOf(frame: CborValue): string {
  const f = frame as CborValue[];
  if (Array.isArray(f) && f[0] === 2) return String(f[1]);
  if (Array.isArray(f) && f[0] === 0 && (f[1] as { t?: string })?.t === 'refused') return String((f[1] as { code: string }).code);
  return `unexpected:${JSON.stringify(f).slice(0, 60)}`;
}

async function firstAnswer(s: Stream, timeoutMs: number): Promise<string> {
  const lp = lpStream(s);
  try {
    const b = await lp.read({ signal: AbortSignal.timeout(timeoutMs) });
    return codeOf(decodeCanonical(b.subarray(), { recheck: false }));
  } catch (e) {
    return `no-answer:${(e as Error).name}`;
  }
}

/**
 * `streams` exec streams on one connection, each writing `frames` frames of
 * `frameBytes` (the reported attack: 32 × 8 × 4 MB) without waiting. Resolves
 * to the code each stream was answered with.
 */
export async function floodFrames(node: Libp2p, target: Target, streams = 32, frames = 8, frameBytes = 4_000_000): Promise<string[]> {
  // Well-formed data frames [0, bytes] (what the unbounded server collected, up to 16 per stream).
  const body = encodeCanonical([0, new Uint8Array(frameBytes - 16).fill(0x41)]);
  return Promise.all(
    Array.from({ length: streams }, async () => {
      const s = await node.dialProtocol(target, EXEC_PROTOCOL);
      const lp = lpStream(s, { maxDataLength: frameBytes + 16 });
      // Written in the background: the provider's answer must not depend on the attacker finishing.
      void (async () => {
        for (let i = 0; i < frames; i++) await lp.write(body);
      })().catch(() => {});
      const code = await firstAnswer(s, 60_000);
      s.abort(new Error('done'));
      return code;
    }),
  );
}

/** Well-formed frames within the size bound, whose header's records are junk: refused on the header, the rest unread. */
export async function floodBogusHeaders(node: Libp2p, target: Target, streams = 32, frames = 8, frameBytes = 480 * 1024): Promise<string[]> {
  const junk = new Uint8Array(frameBytes / 3).fill(7);
  const header = encodeCanonical([0, { t: 'exec', selection: junk, job: junk, offer: junk }]);
  const chunk = encodeCanonical([0, { t: 'input', data: new Uint8Array(frameBytes - 64) }]);
  return Promise.all(
    Array.from({ length: streams }, async () => {
      const s = await node.dialProtocol(target, EXEC_PROTOCOL);
      const lp = lpStream(s, { maxDataLength: frameBytes + 1024 });
      void (async () => {
        await lp.write(header);
        for (let i = 1; i < frames; i++) await lp.write(chunk);
      })().catch(() => {});
      const code = await firstAnswer(s, 60_000);
      s.abort(new Error('done'));
      return code;
    }),
  );
}

/** Twenty bytes of 0xff (an unterminated length prefix): resolves to the code of the answer. */
export async function unterminatedVarint(node: Libp2p, target: Target): Promise<string> {
  const s = await node.dialProtocol(target, EXEC_PROTOCOL);
  s.send(new Uint8Array(20).fill(0xff));
  const code = await firstAnswer(s, 60_000);
  s.abort(new Error('done'));
  return code;
}

/** A slowloris stream: half a length prefix, then nothing. Resolves with how long the provider kept it open, ms. */
export async function slowloris(node: Libp2p, target: Target, giveUpMs = 120_000): Promise<{ ms: number; closed: boolean }> {
  const s = await node.dialProtocol(target, EXEC_PROTOCOL);
  const t0 = performance.now();
  s.send(Uint8Array.of(0x80));
  const closed = await new Promise<boolean>((resolve) => {
    const t = setTimeout(() => resolve(false), giveUpMs);
    const done = () => {
      clearTimeout(t);
      resolve(true);
    };
    if (s.status !== 'open') return done();
    s.addEventListener('close', done, { once: true });
    s.addEventListener('remoteCloseWrite', done, { once: true });
  });
  const ms = performance.now() - t0;
  s.abort(new Error('done'));
  return { ms, closed };
}

/** Every pattern once, sampling `pid`'s RSS meanwhile; the peak, MiB. */
export async function abuseWithPeak(node: Libp2p, target: Target, pid: number): Promise<{ peakMiB: number; codes: Record<string, number> }> {
  let peak = rssMiB(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssMiB(pid));
    } catch {
      /* gone */
    }
  }, 50);
  const codes: Record<string, number> = {};
  try {
    const all = [...(await floodFrames(node, target)), ...(await floodBogusHeaders(node, target)), await unterminatedVarint(node, target)];
    for (const c of all) codes[c] = (codes[c] ?? 0) + 1;
  } finally {
    clearInterval(timer);
  }
  peak = Math.max(peak, rssMiB(pid));
  return { peakMiB: peak, codes };
}

/** The bench: one provider daemon, idle RSS beside its peak under every pattern. */
export async function run(): Promise<BenchResult> {
  const { Cluster, providerConfig, bootstrapAddr } = await import('../../test/e2e/node-helpers.js');
  const { startNode } = await import('../../test/e2e/net-helpers.js');
  const c = new Cluster('bench-exec-abuse');
  const client = await startNode({ syncOnConnect: [] });
  try {
    const cfg = providerConfig();
    (cfg.provider as Record<string, unknown>).execRequestMs = 5_000;
    const p = await c.start('p', cfg);
    const target = multiaddr(bootstrapAddr(p));
    await client.libp2p.dial(target);
    await new Promise((r) => setTimeout(r, 2_000));
    const idle = rssMiB(p.child.pid!);
    const { peakMiB, codes } = await abuseWithPeak(client.libp2p, target, p.child.pid!);
    const slow = await slowloris(client.libp2p, target);
    const after = rssMiB(p.child.pid!);
    const report = [
      'exec/1 abuse: one provider daemon; 32 streams × 8 × 4 MB frames, 32 streams of bogus headers + 480 KiB chunks, 20 × 0xff, then a slowloris stream (execRequestMs 5000)',
      table([
        { what: 'RSS idle', MiB: idle.toFixed(1) },
        { what: 'RSS peak under abuse', MiB: peakMiB.toFixed(1) },
        { what: 'RSS after', MiB: after.toFixed(1) },
        { what: 'peak / idle', MiB: (peakMiB / idle).toFixed(2) },
      ]),
      `answers: ${Object.entries(codes)
        .map(([k, v]) => `${k} × ${v}`)
        .join(', ')}`,
      `slowloris stream closed by the provider after ${(slow.ms / 1000).toFixed(1)} s (closed: ${slow.closed})`,
    ].join('\n');
    return { report, targets: [] };
  } finally {
    await client.stop();
    await c.destroy();
  }
}
