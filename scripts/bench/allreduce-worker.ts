/**
 * One process of the all-reduce benchmark (scripts/bench/training.ts): rank k
 * of n, keys from fixed seeds so every process knows its peers, a TrainWire
 * over real libp2p. It measures (a) the raw stream throughput of one message of
 * `bytes` to its successor (as the ring sends it: 1 MiB messages), and (b) `reps` ring all-reduces of `bytes` of
 * int32, each after a 1-value all-reduce as a barrier; prints JSON on stdout.
 *   node allreduce-worker.js <rank> <n> <port,port,…> <bytes> <reps>
 */
import '../../src/polyfill.js';
import { Ed25519Signer, didFromPublicKey } from '../../src/records/index.js';
import { createNetwork } from '../../src/net/node.js';
import { peerIdFromDid } from '../../src/node/peer-id.js';
import { Mailbox, ringAllReduce } from '../../src/training/allreduce.js';
import { ChunkAssembler, TrainWire, sendChunk, wireRing } from '../../src/training/transport.js';

const args = process.argv.slice(2);
const [rank, n] = [Number(args[0]), Number(args[1])];
const ports = args[2]!.split(',').map(Number);
const [bytes, reps] = [Number(args[3]), Number(args[4])];
const keys = Array.from({ length: n }, (_, i) => new Ed25519Signer(new Uint8Array(32).fill(i + 1)));
const dids = keys.map((k) => didFromPublicKey(k.publicKey));
const addr = (i: number) => `/ip4/127.0.0.1/tcp/${ports[i]}/p2p/${peerIdFromDid(dids[i]!).toString()}`;
const box = new Mailbox({ timeoutMs: 60_000, maxHeld: 4096 });
const net = await createNetwork({ signer: keys[rank]!, listen: [`/ip4/127.0.0.1/tcp/${ports[rank]}`], loopback: true, syncOnConnect: [], topics: [] });
const chunks = new ChunkAssembler((from, tag, data) => box.put(from, tag, data));
const wire = new TrainWire(net, (from, head, payload) => {
  if (head.k === 'chunk') chunks.put(dids.indexOf(from), head, payload);
});
await wire.start();
await net.start();
const ring = wireRing(wire, box, dids, dids[rank]!, (d) => dids.indexOf(d), 60_000);
// connect to every peer (they start at different moments), then a barrier
// each pair connects once (the lower rank dials), so no two connections race to be pruned
for (let i = rank + 1; i < n; i++) {
  for (let tries = 0; ; tries++) {
    try {
      await net.dial(addr(i), { timeoutMs: 2_000 });
      break;
    } catch (e) {
      if (tries > 100) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
while (net.peers().length < n - 1) await new Promise((r) => setTimeout(r, 100));
await ringAllReduce(ring, Int32Array.of(1), 'sum', 'hello');
const len = bytes >> 2;
const data = Int32Array.from({ length: len }, (_, i) => (i % 255) - 127);
// (a) raw: one message of `bytes` to the successor, timed on the receiver
const payload = new Uint8Array(bytes);
const next = (rank + 1) % n;
const prev = (rank - 1 + n) % n;
// fastest of 3 (the first also warms up the path), each after a barrier
let rawMs = Infinity;
for (let k = 0; k < 3; k++) {
  await ringAllReduce(ring, Int32Array.of(0), 'sum', `raw-b${k}`);
  const t0 = performance.now();
  await Promise.all([sendChunk(wire, dids[next]!, `raw${k}`, payload, 60_000), box.take(prev, `raw${k}`)]);
  rawMs = Math.min(rawMs, performance.now() - t0);
}
const times: number[] = [];
for (let r = 0; r < reps; r++) {
  await ringAllReduce(ring, Int32Array.of(0), 'sum', `b${r}`);
  const s = performance.now();
  const out = await ringAllReduce(ring, data, 'sum', `r${r}`);
  times.push(performance.now() - s);
  if (out[1] !== data[1]! * n) throw new Error('wrong sum');
  box.forget(`r${r}`);
}
await ringAllReduce(ring, Int32Array.of(0), 'sum', 'bye');
process.stdout.write(JSON.stringify({ rank, rawMs, times }) + '\n');
await new Promise((r) => setTimeout(r, 500));
await net.stop();
process.exit(0);
