/**
 * `c0mpute reputation`'s listing (src/cli/reputation-list.ts), against review s43 R9 F2: the command printed every
 * provider in DID order with no counts, a first-hand provider wherever its DID sorted among throwaway keys. Now: the
 * first page in the console's evidence order with the counts line; `--all` walks every page by the keyset cursor;
 * a daemon that answers every provider (before page parameters) is paged here by the same rule.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { unknownFigures, type Figures } from '../../../src/reputation/derive.js';
import { asReputationPage, collectReputation, reputationLimit, reputationLines, reputationOne, reputationPageOf, untrustedNote } from '../../../src/cli/reputation-list.js';
import { short } from '../../../src/cli/short.js';
import { DEFAULT_LIST_LIMIT } from '../../../src/cli/limit.js';

const did = (tag: string) => `did:key:z6Mk${tag.padEnd(44, 'x')}`;
const fig = (tag: string, f: Partial<Figures>): Figures => ({ ...unknownFigures(did(tag)), ...f });
// DID order (the table's all()): the first-hand provider sorts last, after every throwaway key
const all = [...[...Array(40)].map((_, i) => fig(`fake${String(i).padStart(3, '0')}`, { untrusted: 1 })), fig('zzSecondHand', { jobs: 1, secondHand: 1, successes: 1, score: 0.6 }), fig('zzzFirstHand', { jobs: 3, firstHand: 3, successes: 3, score: 0.8 })];

test('the first page: first-hand evidence first, the counts line, and what more there is', async () => {
  const l = await collectReputation(async (size, after) => reputationPageOf(all, size, after), { limit: 5, all: false });
  assert.deepEqual(l.providers.map((f) => f.did).slice(0, 2), [did('zzzFirstHand'), did('zzSecondHand')]);
  assert.deepEqual([l.total, l.counted, l.firstHand, l.providers.length], [42, 2, 1, 5]);
  assert.ok(l.next);
  const lines = reputationLines(l);
  assert.equal(lines[0], '42 providers with evidence held; 2 with evidence that counts, 1 of them first-hand; 40 with untrusted evidence only');
  assert.match(lines[2]!, new RegExp(`^${short(did('zzzFirstHand')).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  assert.equal(lines.length, 1 + 1 + 5 + 1);
  assert.match(lines.at(-1)!, /the first 5 of 42.*--all/);
});

test('--all walks every page by the cursor, each provider once, in the same order', async () => {
  const asked: Array<string | undefined> = [];
  const l = await collectReputation(async (size, after) => (asked.push(after), reputationPageOf(all, size, after)), { limit: 5, all: true, pageSize: 10 });
  assert.equal(asked.length, 5, '42 providers, 10 a page');
  assert.equal(asked[0], undefined);
  assert.equal(l.providers.length, 42);
  assert.equal(new Set(l.providers.map((f) => f.did)).size, 42);
  assert.equal(l.next, undefined);
  assert.deepEqual(l.providers.map((f) => f.did), reputationPageOf(all, 1000, undefined).providers.map((f) => f.did));
  assert.ok(!reputationLines(l).some((s) => s.includes('--all for more')));
});

test('a daemon that answers every provider is paged here: same order and counts, and --all ends', async () => {
  const l = await collectReputation(async (size, after) => asReputationPage({ providers: all }, size, after), { limit: 5, all: true, pageSize: 10 });
  assert.equal(l.providers.length, 42);
  assert.equal(l.providers[0]!.did, did('zzzFirstHand'));
  const first = await collectReputation(async (size, after) => asReputationPage({ providers: all }, size, after), { limit: 5, all: false });
  assert.deepEqual([first.total, first.counted, first.firstHand, first.providers.length], [42, 2, 1, 5]);
});

test('no evidence says so; --limit is 1 to 1,000', () => {
  assert.deepEqual(reputationLines({ total: 0, counted: 0, firstHand: 0, providers: [] }), ['no evidence yet: every provider scores 0.5 (unknown)']);
  assert.equal(reputationLimit(undefined), DEFAULT_LIST_LIMIT);
  assert.equal(reputationLimit('1000'), 1000);
  for (const bad of ['0', '1001', '-1', 'x', '1.5']) assert.throws(() => reputationLimit(bad), (e: Error & { code?: string }) => e.code === 'CLI_BAD_LIMIT', bad);
});

test('`reputation <did>` for a key with no evidence says so under its row of zeros (QA, reputation and audit pass, F12)', () => {
  const lines = reputationOne(unknownFigures(did('nobody')));
  assert.equal(lines.length, 3);
  assert.match(lines[1]!, /0\.500 {2}0 /);
  assert.equal(lines[2], 'no evidence held for this key: it scores 0.5 (unknown), as every provider with none does');
  // a key with evidence, even untrusted only: its row, no such note
  assert.equal(reputationOne(fig('some', { untrusted: 1 })).length, 2);
});

test('a row counting a job in both jobs and untrusted gets a note saying the columns overlap; the numbers stay (QA, reputation and audit pass, F10)', () => {
  // the QA's p4: two non-deliveries counted, and the late EXEC_PROVIDER_CRASHED receipt of one of those jobs at weight 0
  const p4 = fig('p4', { jobs: 2, nonDeliveries: 2, firstHand: 2, untrusted: 1, score: 0.167 });
  const l = { total: 1, counted: 1, firstHand: 1, providers: [p4] };
  const lines = reputationLines(l);
  assert.match(lines[2]!, /0\.167 {2}2 .* 1$/, 'the numbers as they were');
  assert.match(lines.at(-1)!, /^untrusted: outcomes held that weigh 0 here, each its own: one job can be in both jobs and untrusted/);
  assert.equal(untrustedNote([p4]), lines.at(-1));
  assert.match(reputationOne(p4).at(-1)!, /^untrusted: /);
  // no row with both: no note
  assert.equal(untrustedNote(all), undefined);
  assert.ok(!reputationLines({ total: 42, counted: 2, firstHand: 1, providers: all }).some((s) => s.startsWith('untrusted:')));
});
