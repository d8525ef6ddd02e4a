/**
 * The pool scenario's line after each pooled job (src/devnet/pool-scenario.ts pooledJobLine): the member the job's
 * hash picks when a member ran it, and who ran it when the pool did not win. Before, the pick was printed whoever ran
 * it: on a reused --dir, a job 1 only solo1 quoted on read `completed: keccak256(b965d630aaed…) picks m3`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pooledJobLine, ranElsewhere } from '../../../src/devnet/pool-scenario.js';
import { selectMember } from '../../../src/pools/choice.js';

const MEMBERS = ['did:key:z6MkM1', 'did:key:z6MkM2', 'did:key:z6MkM3'];
const NAMES: Record<string, string> = { 'did:key:z6MkM1': 'm1', 'did:key:z6MkM2': 'm2', 'did:key:z6MkM3': 'm3', 'did:key:z6MkS1': 'solo1' };
const name = (did: string) => NAMES[did] ?? did;
const JOB = 'sha256:b965d630aaed3c4e86eda24acaa07a0205858f327c887f0edbbd35712ea7bd49';

test('a job a member ran names the member its hash picks; one a solo provider ran names that provider, not a member', () => {
  const picked = name(selectMember(JOB, MEMBERS));
  assert.equal(pooledJobLine('completed', JOB, picked === 'm1' ? MEMBERS[0] : MEMBERS[1], MEMBERS, name), `  completed: keccak256(b965d630aaed…) picks ${picked} (active[u64(last 8 bytes) mod 3])`);
  const solo = pooledJobLine('completed', JOB, 'did:key:z6MkS1', MEMBERS, name);
  assert.match(solo, /^ {2}completed at solo1, not at the pool/);
  assert.doesNotMatch(solo, /picks/);
});

test('who ran it: the receipt signer when the pool was never tried; none when a member was tried (a failover after the pool won); a "not tried" entry never (review s57)', () => {
  const S1 = 'did:key:z6MkS1';
  assert.equal(ranElsewhere({ attempts: [{ provider: S1, outcome: 'completed' }], receipt: { record: { provider: S1 } } }, MEMBERS), S1);
  assert.equal(ranElsewhere({ attempts: [{ provider: MEMBERS[1]!, outcome: 'failed: EXEC_FAILED' }, { provider: S1, outcome: 'completed' }], receipt: { record: { provider: S1 } } }, MEMBERS), undefined);
  assert.equal(ranElsewhere({ attempts: [{ provider: S1, outcome: 'failed: EXEC_FAILED' }, { provider: MEMBERS[0]!, outcome: 'not tried: the deadline' }, { provider: '(2 more)', outcome: 'not tried: the deadline' }] }, MEMBERS), S1);
});
