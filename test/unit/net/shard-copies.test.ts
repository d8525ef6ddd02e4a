/**
 * A record of several markets goes out on each (shard-copies.ts): on its other
 * topics to the peers not on the first, each once, never back to its source or
 * to a peer below the publish threshold.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sendOnOtherTopics, type ShardCopyHost } from '../../../src/net/shard-copies.js';
import { sha256 } from '../../../src/records/address.js';
import { Ed25519Signer, seal, T } from '../../../src/records/index.js';
import { topicFor } from '../../../src/net/topics.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function host(topics: Record<string, string[]>, scores: Record<string, number> = {}, noStream: string[] = [], idontwants: Record<string, string[]> = {}): ShardCopyHost & { sent: Array<{ id: string; topic: string }> } {
  const sent: Array<{ id: string; topic: string }> = [];
  return {
    sent,
    idontwants: new Map(Object.entries(idontwants).map(([p, ids]) => [p, new Map(ids.map((i) => [i, 0]))])),
    msgIdToStrFn: hex,
    topics: new Map(Object.entries(topics).map(([t, ps]) => [t, new Set(ps)])),
    sendRpc(id, rpc) {
      if (noStream.includes(id)) return false;
      const m = (rpc as { messages: Array<{ topic: string; data: Uint8Array }> }).messages;
      assert.equal(m.length, 1);
      sent.push({ id, topic: m[0]!.topic });
      return true;
    },
    getScore: (id) => scores[id] ?? 0,
    opts: { scoreThresholds: { publishThreshold: -50 } },
  };
}

test('copies go to the peers of the other topics that are not on the first, each once', () => {
  const h = host({ s1: ['a', 'both'], s2: ['both', 'b', 'bc', 'src'], s3: ['bc', 'c'] });
  const out = sendOnOtherTopics(h, new Uint8Array([1]), 's1', ['s2', 's3'], 'src');
  assert.deepEqual(out.sort(), ['b', 'bc', 'c']);
  assert.deepEqual(h.sent, [{ id: 'b', topic: 's2' }, { id: 'bc', topic: 's2' }, { id: 'c', topic: 's3' }]);
});

test('a peer below the publish threshold or without a stream gets none; no other topics, nothing sent', () => {
  const h = host({ s1: [], s2: ['low', 'gone', 'ok'] }, { low: -100 }, ['gone']);
  assert.deepEqual(sendOnOtherTopics(h, new Uint8Array([1]), 's1', ['s2']), ['ok']);
  assert.deepEqual(sendOnOtherTopics(h, new Uint8Array([1]), 's1', []), []);
  assert.deepEqual(sendOnOtherTopics(h, new Uint8Array([1]), 's1', ['unknown']), []);
});

test('a peer that said it has the message (IDONTWANT) gets no copy', () => {
  // the id a peer gives an advert on an advert topic is its content address, whichever market (libp2p-host.ts messageId)
  const data = seal(T.advert, { seq: 1, issuedAt: 1, expiresAt: 2, workloads: ['infer.llm'], tier: 'standard', hardware: { cpuCores: 1, memoryMiB: 1 } }, Ed25519Signer.generate()).bytes;
  const [s1, s2] = [topicFor('advert', 'public', '00'), topicFor('advert', 'public', '01')];
  const h = host({ [s1]: [], [s2]: ['has', 'other', 'wants'] }, {}, [], { has: [hex(sha256(data))], other: ['something else'] });
  assert.deepEqual(sendOnOtherTopics(h, data, s1, [s2]), ['other', 'wants']);
});
