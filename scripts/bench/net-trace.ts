/**
 * Where a cascade's time goes in bench net (1)'s 20-node mesh (docs/scale.md §1 "Seventh round"): per node and
 * message, the first copy's arrival at gossipsub (`handleReceivedMessage`), its delivery (the validated advert to a
 * subscriber, the raw message to gossipsub's 'message' listeners) and its forward (`forwardMessage`). Printed per
 * kind: delivery p50 from publish, and the medians and p90s of
 *   on node  = arrival → forward (validation and delivery, or none);
 *   transit  = the sender's forward (or publish) → arrival here (the send, the receive, and the wait on the one
 *              event loop behind the other nodes' work).
 * Rounds alternate the kinds, each alone: half the messages validated, then half raw, twice, 30 ms apart. A raw
 * message goes out on both raw topics as bench net sends it (the second publication is a duplicate gossipsub drops),
 * so a node's first arrival may pair with a forward on either.
 *
 *   node dist/scripts/bench/net-trace.js [messages, default 60]
 */
import '../../src/polyfill.js';
import { Ed25519Signer } from '../../src/records/index.js';
import type { Network } from '../../src/net/node.js';
import type { GossipInternals } from '../../src/net/link-hosts.js';
import { startMesh, warmUp } from './net.js';
import { RAW_TOPICS } from './mesh-shape.js';
import { makeAdvert } from './advert-fixture.js';
import { median, percentile } from './lib.js';

const N = 20;
/** Messages of each kind in each of the two rounds (the argument is the total of each kind). */
const HALF = Math.max(1, Math.round(Number(process.argv[2] ?? 60) / 2));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface At {
  arrived: number;
  from: string;
  forwarded?: number;
  delivered?: number;
}
interface Sent {
  at: number;
  src: number;
  nodes: Map<number, At>;
}
type Hooked = GossipInternals & {
  handleReceivedMessage(from: { toString(): string }, msg: { data: Uint8Array }): Promise<void>;
  forwardMessage(id: string, msg: { data: Uint8Array }, from?: string, excluded?: unknown): void;
};

// a message is known by its last 16 bytes (an advert's signature, a raw message's random tail): cheap, and the same for both kinds
const key = (d: Uint8Array): string => Buffer.from(d.buffer, d.byteOffset + d.byteLength - 16, 16).toString('hex');
const sent = new Map<string, Sent>();

const nets: Network[] = await startMesh(N);
const ids = nets.map((n) => n.peerId.toString());
nets.forEach((net, i) => {
  const gs = net.libp2p.services.pubsub as unknown as Hooked;
  const recv = gs.handleReceivedMessage.bind(gs);
  gs.handleReceivedMessage = (from, msg) => {
    const s = sent.get(key(msg.data));
    if (s && !s.nodes.has(i)) s.nodes.set(i, { arrived: performance.now(), from: from.toString() });
    return recv(from, msg);
  };
  const fwd = gs.forwardMessage.bind(gs);
  gs.forwardMessage = (id, msg, from, excluded) => {
    const at = sent.get(key(msg.data))?.nodes.get(i);
    if (at && at.forwarded === undefined) at.forwarded = performance.now();
    fwd(id, msg, from, excluded);
  };
  const delivered = (d: Uint8Array): void => {
    const at = sent.get(key(d))?.nodes.get(i);
    if (at && at.delivered === undefined) at.delivered = performance.now();
  };
  net.subscribe('advert', (rec) => delivered(rec.bytes));
  net.libp2p.services.pubsub.addEventListener('message', (e) => {
    if (RAW_TOPICS.includes(e.detail.topic)) delivered(e.detail.data);
  });
});

const signers = nets.map(() => Ed25519Signer.generate());
await warmUp(nets, signers);
const adverts = Array.from({ length: 2 * HALF }, (_, i) => makeAdvert(signers[i % N]!));
const keys: Record<'validated' | 'raw', string[]> = { validated: [], raw: [] };
let a = 0;
for (let round = 0; round < 2; round++) {
  for (const kind of ['validated', 'raw'] as const) {
    for (let i = 0; i < HALF; i++) {
      const src = i % N;
      const d = kind === 'validated' ? adverts[a++]! : Uint8Array.from({ length: adverts[0]!.length }, () => (Math.random() * 256) | 0);
      sent.set(key(d), { at: performance.now(), src, nodes: new Map() });
      keys[kind].push(key(d));
      if (kind === 'validated') await nets[src]!.publish('advert', d);
      else for (const t of RAW_TOPICS) await nets[src]!.libp2p.services.pubsub.publish(t, d);
      await sleep(30);
    }
    await sleep(300);
  }
}

const ms = (x: number): string => x.toFixed(3);
for (const kind of ['validated', 'raw'] as const) {
  const delivery: number[] = [];
  const onNode: number[] = [];
  const transit: number[] = [];
  for (const k of keys[kind]) {
    const s = sent.get(k)!;
    for (const at of s.nodes.values()) {
      if (at.delivered !== undefined) delivery.push(at.delivered - s.at);
      if (at.forwarded !== undefined) onNode.push(at.forwarded - at.arrived);
      const from = ids.indexOf(at.from);
      const sender = s.nodes.get(from);
      if (sender?.forwarded !== undefined) transit.push(at.arrived - sender.forwarded);
      else if (from === s.src) transit.push(at.arrived - s.at);
    }
  }
  console.log(
    `${kind.padEnd(9)} deliveries ${delivery.length}/${keys[kind].length * (N - 1)}, p50 ${ms(median(delivery))} ms; ` +
      `on node p50 ${ms(median(onNode))} p90 ${ms(percentile(onNode, 90))} ms; transit p50 ${ms(median(transit))} p90 ${ms(percentile(transit, 90))} ms`,
  );
}
await Promise.allSettled(nets.map((x) => x.stop()));
process.exit(0);
