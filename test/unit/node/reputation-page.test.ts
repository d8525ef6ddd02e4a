/**
 * The Reputation view's page (src/node/reputation-page.ts), against review s43
 * R3 F3: ~10,000 providers a hostile peer made up (fresh keys, outcomes from
 * buyers this node does not trust: `untrusted`, score 0.5) came in one answer
 * of every provider, sorted by score, so a real provider this node had bad
 * first-hand evidence about (score < 0.5) sat below all of them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { C0Error } from '../../../src/errors.js';
import { unknownFigures, type Figures } from '../../../src/reputation/derive.js';
import { REPUTATION_PAGE_DEFAULT, parseReputationPage, reputationPage } from '../../../src/node/reputation-page.js';

const did = (tag: string) => `did:key:z6Mk${tag.padEnd(44, 'x')}`;
const fig = (tag: string, f: Partial<Figures>): Figures => ({ ...unknownFigures(did(tag)), ...f });

const real = [
  fig('badFirstHand', { jobs: 5, firstHand: 5, failures: 4, successes: 1, score: 0.25 }),
  fig('goodSecondHand', { jobs: 2, secondHand: 2, successes: 2, score: 0.7 }),
  fig('goodFirstHand', { jobs: 9, firstHand: 9, successes: 9, score: 0.9 }),
];
const fakes = [...Array(2000)].map((_, i) => fig(`fake${String(i).padStart(5, '0')}`, { untrusted: 1 }));
// the table's all(): DID order, the real providers mixed in among the fakes
const all = [...real, ...fakes].sort((a, b) => (a.did < b.did ? -1 : 1));

test('the default page is bounded and puts the providers with evidence that counts first, first-hand first', () => {
  const q = parseReputationPage(new URLSearchParams('limit=100'))!;
  assert.equal(q.sort, 'evidence');
  const p = reputationPage(all, q);
  assert.equal(p.providers.length, REPUTATION_PAGE_DEFAULT);
  assert.deepEqual(p.providers.slice(0, 3).map((f) => f.did), [did('goodFirstHand'), did('badFirstHand'), did('goodSecondHand')]);
  assert.deepEqual([p.total, p.counted, p.firstHand, p.matched, p.offset], [2003, 3, 2, 2003, 0]);
  assert.ok(p.next);
});

test('walking by next lists every provider exactly once; the search finds one among the fakes', () => {
  const seen: string[] = [];
  let after: string | undefined;
  for (;;) {
    const p = reputationPage(all, parseReputationPage(new URLSearchParams(`limit=300${after ? `&after=${after}` : ''}`))!);
    assert.equal(p.offset, seen.length);
    seen.push(...p.providers.map((f) => f.did));
    if (!p.next) break;
    after = p.next;
  }
  assert.equal(seen.length, 2003);
  assert.equal(new Set(seen).size, 2003);
  const found = reputationPage(all, parseReputationPage(new URLSearchParams('q=GOODSECOND'))!);
  assert.deepEqual(found.providers.map((f) => f.did), [did('goodSecondHand')]);
  assert.equal(found.total, 2003);
  const byScore = reputationPage(all, parseReputationPage(new URLSearchParams('sort=score&limit=1'))!);
  assert.equal(byScore.providers[0]!.did, did('badFirstHand'), 'sort=score: lowest first');
});

test('no page parameter is every provider (the CLI); a bad one is a clear error', () => {
  assert.equal(parseReputationPage(new URLSearchParams('')), undefined);
  assert.equal(parseReputationPage(new URLSearchParams('overlay=x')), undefined);
  const code = (s: string) => {
    try {
      parseReputationPage(new URLSearchParams(s));
    } catch (e) {
      return (e as C0Error).code;
    }
    return 'ok';
  };
  assert.equal(code('sort=price'), 'API_BAD_QUERY');
  assert.equal(code('limit=0'), 'API_BAD_LIMIT');
  assert.equal(code('limit=1001'), 'API_BAD_LIMIT');
  assert.equal(code('after=abc'), 'API_BAD_CURSOR');
  const p = reputationPage(all, parseReputationPage(new URLSearchParams('limit=5'))!);
  assert.equal(code(`sort=score&after=${p.next}`), 'API_BAD_CURSOR', 'a cursor of another order');
});
