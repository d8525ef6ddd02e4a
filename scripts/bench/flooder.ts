/**
 * The flooding peer of `bench net` (2), in a process of its own (forked by
 * net.ts `ingest`), so its publishing does not share the validating node's
 * core while the raw-verify baseline has a core to itself. IPC protocol:
 *   parent → {addr, count, signers}; child → 'ready' (connected, records sealed);
 *   parent → 'warm' (publish one advert per signer: the node then knows them);
 *   parent → 'flood' (send the `count` records, BATCH to a gossipsub RPC frame);
 *   parent → 'stop'.
 */
import '../../src/polyfill.js';
import { Ed25519Signer } from '../../src/records/index.js';
import { createNetwork } from '../../src/net/node.js';
import { NO_FLOOD_LIMITS } from '../../src/net/flood-limits.js';
import { shardOf, topicFor } from '../../src/net/topics.js';
import { makeAdvert } from './advert-fixture.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** `block` signers take turns over each `blockRecords` records (the flood before the eleventh round was one block: 3,000 records, 100 signers). */
type Msg = { addr: string; count: number; signers: number; block: number; blockRecords: number } | 'warm' | 'flood' | 'stop';

const first = await new Promise<Msg>((r) => process.once('message', (m) => r(m as Msg)));
if (typeof first !== 'object') throw new Error('flooder: expected the set-up message first');
const f = await createNetwork({ signer: Ed25519Signer.generate(), listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, topics: ['advert'], syncOnConnect: [], floodLimits: NO_FLOOD_LIMITS });
await f.start();
const target = await f.dial(first.addr);
const end = Date.now() + 10_000;
while (Date.now() < end && !f.topicPeers('advert').includes(target.toString())) await sleep(20);
await sleep(500);
const signers = Array.from({ length: first.signers }, () => Ed25519Signer.generate());
const warm = signers.map((s) => makeAdvert(s));
// each signer's flood adverts carry higher seqs than its warm-up advert (sealed in order)
const { block, blockRecords } = first;
const recs = Array.from({ length: first.count }, (_, i) => makeAdvert(signers[(block * Math.floor(i / blockRecords) + (i % block)) % signers.length]!));
const topic = topicFor('advert', 'public', shardOf('infer.llm'));
const pubsub = f.libp2p.services.pubsub;
/**
 * The flood goes out as gossipsub RPCs of BATCH messages each (a peer may pack
 * several messages in one RPC; the receiver handles each message exactly as a
 * single one): one publish per record would make the flooder's own gossipsub
 * and Noise work, not the node's ingest, the limit of the figure.
 */
const BATCH = 50;
const gs = pubsub as unknown as { sendRpc(id: string, rpc: { subscriptions: never[]; messages: Array<{ topic: string; data: Uint8Array }> }): boolean };
const rpcs: Array<Array<{ topic: string; data: Uint8Array }>> = [];
for (let i = 0; i < recs.length; i += BATCH) rpcs.push(recs.slice(i, i + BATCH).map((data) => ({ topic, data })));
process.on('message', (m: Msg) => {
  void (async () => {
    if (m === 'warm') for (const r of warm) void pubsub.publish(topic, r).catch(() => undefined);
    else if (m === 'flood') {
      // the flooder skips its own checks (raw frames), yielding now and then so its socket drains
      for (let i = 0; i < rpcs.length; i++) {
        if (!gs.sendRpc(target.toString(), { subscriptions: [], messages: rpcs[i]! })) throw new Error('flooder: no stream to the node');
        if (i % 4 === 3) await sleep(0);
      }
    } else if (m === 'stop') {
      await f.stop();
      process.exit(0);
    }
  })();
});
process.send!('ready');
