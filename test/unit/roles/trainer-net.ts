/**
 * An in-process network for training workers (src/roles/trainer/worker.ts with
 * `net`): `request(to, protocol, frames)` calls the handler `to` registered
 * directly, with the caller's peer id; `tap(from, to, frames)` may rewrite a
 * message or drop it (null: a deadline, as a silent member gives), and is told
 * the request's deadline (ms) to model a member that answers late. A second
 * `handle` of one protocol replaces the first, as src/net/protocols.ts serve()
 * does on a real host. `makeRun` signs a small run for the members, `runAll`
 * runs them to their end.
 */
import { stringify } from 'yaml';
import { C0Error } from '../../../src/errors.js';
import type { CborValue } from '../../../src/records/cbor.js';
import type { ProtocolHandler } from '../../../src/net/protocols.js';
import type { Opened } from '../../../src/records/envelope.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { TrainerWorker, type TrainerEvent } from '../../../src/roles/trainer/worker.js';
import type { TrainRun } from '../../../src/training/record-kinds.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, type Party } from '../market/fixtures.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';

export type Frames = CborValue[];
export type Tap = (from: string, to: string, frames: Frames, deadlineMs: number) => Promise<Frames | null> | Frames | null;

export interface MemberNet {
  did: string;
  handle(protocol: string, h: ProtocolHandler): Promise<void>;
  unhandle(protocol: string): Promise<void>;
  request(to: string, protocol: string, frames: CborValue[], o?: { limits?: { deadlineMs?: number } }): Promise<CborValue[]>;
}

export interface FakeNet {
  netFor(did: string): MemberNet;
  /** Deliver `frames` to `to`'s handler as if `from` sent them; the handler's answer frames. */
  deliver(from: string, to: string, protocol: string, frames: CborValue[]): Promise<CborValue[]>;
  handlers: Map<string, Map<string, ProtocolHandler>>;
}

/** Make `did` a hostile member: its net is `change(its honest net)` laid over the honest one (e.g. another `handle`). */
export function hostileNet(net: FakeNet, did: string, change: (n: MemberNet) => Partial<MemberNet>): FakeNet {
  const netFor = net.netFor;
  net.netFor = (d) => {
    const n = netFor(d);
    return d === did ? { ...n, ...change(n) } : n;
  };
  return net;
}

export function fakeNet(tap?: Tap): FakeNet {
  const handlers = new Map<string, Map<string, ProtocolHandler>>();
  const deliver = async (from: string, to: string, protocol: string, frames: CborValue[]): Promise<CborValue[]> => {
    const h = handlers.get(to)?.get(protocol);
    if (!h) throw new C0Error('NET_DIAL_FAILED', 'fake: no handler');
    const out: CborValue[] = [];
    const ctx = { peer: peerIdFromDid(from), signal: new AbortController().signal, send: async (f: CborValue) => void out.push(f) };
    try {
      await h(
        frames.map((f) => (f instanceof Uint8Array ? f.slice() : f)),
        ctx as never,
      );
    } catch (e) {
      if (e instanceof C0Error) throw new C0Error(e.code, e.message, { detail: { remote: true } });
      throw e;
    }
    return out;
  };
  return {
    handlers,
    deliver,
    netFor: (did) => ({
      did,
      async handle(protocol, h) {
        if (!handlers.has(did)) handlers.set(did, new Map());
        handlers.get(did)!.set(protocol, h);
      },
      async unhandle(protocol) {
        handlers.get(did)?.delete(protocol);
      },
      async request(to, protocol, frames, o = {}) {
        const fr = tap ? await tap(did, to, frames, o.limits?.deadlineMs ?? 1000) : frames;
        if (fr === null) {
          await new Promise((r) => setTimeout(r, Math.min(o.limits?.deadlineMs ?? 1000, 200)));
          throw new C0Error('NET_DEADLINE', 'fake: dropped');
        }
        return deliver(did, to, protocol, fr);
      },
    }),
  };
}

/** A run of the members, signed by `owner`: a small model, 3 epochs of 3 steps, `onFailure: continue` (`extra` overrides). */
export function makeRun(members: Party[], owner: Party, extra: Record<string, unknown> = {}): Opened<TrainRun> {
  const yaml = stringify({ name: 'hostile', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 3, epochs: 3, timeoutMs: 300, onFailure: 'continue', ...extra, members: members.map((m, i) => ({ did: m.did, addr: `/ip4/127.0.0.1/tcp/${i + 1}` })) });
  return buildRun(yaml, owner.signer, NOW).bundle.run;
}

/** Start, join and run every member's worker over `net`; each run's outcome, the workers (stopped) and their events. */
/** `started`: given the workers once they are made (a test that acts on one while it runs). */
export async function runAll(members: Party[], run: Opened<TrainRun>, net: FakeNet, onEvent?: (did: string, e: TrainerEvent) => void, started?: (workers: TrainerWorker[]) => void) {
  const dirs = members.map(() => tempDir('c0-train-net-'));
  const events = new Map<string, TrainerEvent[]>(members.map((m) => [m.did, []]));
  const workers = members.map(
    (m, i) =>
      new TrainerWorker({
        signer: m.signer,
        did: m.did,
        run,
        addrs: {},
        dir: dirs[i]!.dir,
        clock: () => Date.now(),
        net: net.netFor(m.did) as never,
        joinTimeoutMs: 10_000,
        onEvent: (e) => {
          events.get(m.did)!.push(e);
          onEvent?.(m.did, e);
        },
      }),
  );
  started?.(workers);
  try {
    for (const w of workers) await w.start();
    await Promise.all(workers.map((w) => w.join()));
    const res = await Promise.allSettled(workers.map((w) => w.run()));
    for (const w of workers) await w.stop();
    return { workers, res, events };
  } finally {
    for (const d of dirs) d.cleanup();
  }
}
