/**
 * What the benches that run one node per child process share (copies.ts, net-procs.ts, opens.ts): their `--name=value`
 * options, asking a child and waiting for its answer, stopping every child; in a child, leaving when the parent goes,
 * serving the parent's mesh messages, timing the node's topic validators, and profiling a window.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import type { Network } from '../../src/net/node.js';

/** A `--name=value` option of this process, or `def`. */
export function arg(name: string, def: string): string {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? a.slice(name.length + 3) : def;
}

/** A numeric `--name=value` option: a value that is not a non-negative number is an error naming `bench`, not a NaN. */
export function numArg(name: string, def: number, bench: string): number {
  const v = arg(name, String(def));
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${bench}: --${name} takes a non-negative number, got "${v}"`);
  return n;
}

/**
 * Start the V8 sampler on this thread (every `intervalUs`); the function returned stops it and writes the profile to
 * `path` (summarise a directory of them with `node dist/scripts/sim/prof.js DIR`). Take a window's figures before
 * calling it: stopping and writing are not the window's work.
 */
export async function startProfile(intervalUs: number): Promise<(path: string) => Promise<void>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
  await session.post('Profiler.start');
  return async (path) => {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(path, JSON.stringify(profile));
    session.disconnect();
  };
}

/**
 * Send `msg` (unless undefined) and wait for the child's answer of kind `want` that `match` accepts; a child that
 * exits first is an error naming `bench`, not a hang.
 */
export function ask<M extends { t: string }, T extends M['t']>(c: ChildProcess, msg: unknown, want: T, bench: string, match: (m: Extract<M, { t: T }>) => boolean = () => true): Promise<Extract<M, { t: T }>> {
  return new Promise((resolve, reject) => {
    const done = () => {
      c.off('message', on);
      c.off('exit', onExit);
    };
    const on = (m: M) => {
      if (m.t !== want || !match(m as Extract<M, { t: T }>)) return;
      done();
      resolve(m as Extract<M, { t: T }>);
    };
    const onExit = (code: number | null, signal: string | null) => {
      done();
      reject(new Error(`${bench}: a node exited (${code ?? signal}) while the bench waited for '${want}'`));
    };
    c.on('message', on);
    c.on('exit', onExit);
    if (msg !== undefined) c.send(msg as object);
  });
}

/** Ask each child to stop (`exit`: the message that makes it stop its node and exit); past 5 s, or gone, it is killed. */
export function stopAll(kids: ChildProcess[], exit: unknown): Promise<void> {
  return Promise.all(
    kids.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          const t = setTimeout(() => c.kill('SIGKILL'), 5_000);
          c.once('exit', () => {
            clearTimeout(t);
            resolve();
          });
          try {
            c.send(exit as object);
          } catch {
            c.kill('SIGKILL');
          }
        }),
    ),
  ).then(() => undefined);
}

/** In a child: exit when the parent goes (killed, crashed), so no node stays behind listening. Call it first. */
export function leaveWithParent(): void {
  process.on('disconnect', () => process.exit(0));
}

/** CPU µs spent in the timed validators and their calls, since the last reset. */
export interface ValidatorTime {
  us: number;
  n: number;
}

/**
 * Time the node's gossipsub topic validators on the topics `which` picks, in CPU (process.cpuUsage): the pipeline,
 * then the accept into the node's views (its record cache, its dispatcher, whose first subscriber runs in the same
 * call). Roughly: the figure is the whole process's CPU over the call (other threads' too), microtasks queued before it
 * may run inside its awaits, and a collection that comes after it is not in it.
 */
export function timeValidators(net: Network, which: (topic: string) => boolean): ValidatorTime {
  const ps = net.libp2p.services.pubsub;
  const acc: ValidatorTime = { us: 0, n: 0 };
  let found = 0;
  for (const [topic, fn] of [...ps.topicValidators]) {
    if (!which(topic)) continue;
    found++;
    ps.topicValidators.set(topic, async (peer, msg) => {
      const c0 = process.cpuUsage();
      try {
        return await fn(peer, msg);
      } finally {
        const c = process.cpuUsage(c0);
        acc.us += c.user + c.system;
        acc.n++;
      }
    });
  }
  if (!found) throw new Error('bench: no topic validator to time on the topics asked for');
  return acc;
}

/** The messages every child answers the same way: dial these peers; is the mesh ready? */
export type MeshMessage = { t: 'dial'; addrs: string[] } | { t: 'ready?' };

/**
 * In a child: tell the parent the node is up (`up`), then serve its messages. A 'dial' dials the peers given; a
 * 'ready?' dials again those not connected (a dial lost to a simultaneous one from the other side, or a connection
 * pruned while the mesh formed) and answers `ready()`. Every other message goes to `handle`.
 */
export function serveParent<M extends { t: string }>(net: Network, up: object, ready: () => object, handle: (m: Exclude<M, MeshMessage>) => Promise<void>): void {
  let dialled: string[] = [];
  process.send!(up);
  process.on('message', (m: M | MeshMessage) => {
    void (async () => {
      if (m.t === 'dial') {
        dialled = (m as MeshMessage & { t: 'dial' }).addrs;
        for (const a of dialled) await net.dial(a).catch(() => undefined);
      } else if (m.t === 'ready?') {
        const have = new Set(net.libp2p.getConnections().map((c) => c.remotePeer.toString()));
        for (const a of dialled) if (!have.has(a.slice(a.lastIndexOf('/') + 1))) void net.dial(a).catch(() => undefined);
        process.send!(ready());
      } else await handle(m as Exclude<M, MeshMessage>);
    })();
  });
}
