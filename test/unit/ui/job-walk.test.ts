/**
 * A job's page (ui/job-walk.ts), against what QA found (session 49): after a daemon restart a job with a failed
 * receipt read "5 Execution … running", and its decision step showed the market now ("No provider is eligible among 4
 * known … 3 offers have expired") though a provider had been selected; a job that got no offers showed an empty
 * ranking and nothing saying why, and the ineligible providers were never listed.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decisionView, emptyStepNote, executionNote, ineligibleLines, jobState, lateText, outcomeView, type DecisionEvent, type WalkFacts } from '../../../ui/job-walk.js';

const NOW = 1_800_000_000_000;
const A = `did:key:z6MkrupSqGVQ${'a'.repeat(32)}xemA`;
const B = `did:key:z6MkbantamXX${'b'.repeat(32)}Bant`;
const walk = (over: Partial<WalkFacts> = {}): WalkFacts => ({ job: { record: { deadline: NOW + 60_000 } }, selections: [], receipts: [], acceptances: [], nondeliveries: [], ...over });
const MARKET_NOW = { summary: 'No provider is eligible among 4 known: no provider has a live offer for this job. 3 offers have expired.', providers: [] };

describe('a job page: where the job stands', () => {
  it('a failed receipt with no run held (the daemon restarted) is ended, not running', () => {
    assert.equal(jobState(walk({ selections: [{}], receipts: [{}] }), [], NOW), 'ended');
  });
  it('a job whose deadline passed is ended, run held or not', () => {
    assert.equal(jobState(walk({ job: { record: { deadline: NOW - 1 } } }), [], NOW), 'ended');
    assert.equal(jobState(walk({ job: { record: { deadline: NOW - 1 } }, run: { done: false } }), [{ e: 'job' }], NOW), 'ended');
  });
  it('a run that said it ended is ended; a held run not done is running, a receipt on failover included', () => {
    assert.equal(jobState(walk({ run: { done: true } }), [{ e: 'job' }], NOW), 'ended');
    assert.equal(jobState(walk(), [{ e: 'job' }, { e: 'done' }], NOW), 'ended');
    assert.equal(jobState(walk({ run: { done: false }, receipts: [{}] }), [{ e: 'job' }], NOW), 'running');
  });
  it('no run held and nothing that ends it: not held here, and step 5 says nothing runs it', () => {
    assert.equal(jobState(walk(), [], NOW), 'not-held');
    assert.match(executionNote('not-held', walk()) ?? '', /not running: this node holds no run/);
  });
  it('an ended job nobody was selected for says nothing ran', () => {
    assert.equal(executionNote('ended', walk()), 'nothing ran: no provider was selected');
    assert.equal(executionNote('ended', walk({ selections: [{}], receipts: [{}] })), undefined);
  });
});

describe('a job page: the decision', () => {
  it('without the run decision, the market now is labelled as now, never as the decision', () => {
    const d = decisionView([], 'ended', MARKET_NOW);
    assert.equal(d.kind, 'unknown');
    assert.match(d.kind === 'unknown' ? d.text : '', /^The decision is not held by this node .*The market now, not at the decision: No provider is eligible among 4 known/);
    assert.equal(decisionView([{ e: 'job' }], 'running', MARKET_NOW).kind, 'pending');
  });
  it('no offers: the explanation summary and each provider failure, worded as c0mpute run words them', () => {
    const fail = (p: string, message: string, code: string) => ({ provider: p, eligible: false, failures: [{ code, message }] });
    const ex = { summary: 'No provider is eligible among 2 known: raise maxPrice to 0.004 USD', relaxations: [{ text: 'raise maxPrice to 0.004 USD (1 provider)' }], providers: [fail(A, 'asks 0.004 USD, above maxPrice 0.0005 USD', 'ASK_ABOVE_PRICE'), fail(B, 'has 8 GiB memory, the job needs 16 GiB', 'MEMORY_TOO_SMALL')] };
    const ev: DecisionEvent = { e: 'decision', decision: { result: { ok: false, ranked: [], ineligible: [], explanation: ex }, market: ex } };
    const d = decisionView([ev], 'ended', MARKET_NOW);
    assert.equal(d.kind, 'none');
    if (d.kind !== 'none') return;
    assert.equal(d.summary, ex.summary);
    assert.deepEqual(d.relaxations, ['raise maxPrice to 0.004 USD (1 provider)']);
    assert.deepEqual(d.ineligible.lines, ['✘ rupSqGVQ…xemA: asks 0.004 USD, above maxPrice 0.0005 USD [ASK_ABOVE_PRICE]', '✘ bantamXX…Bant: has 8 GiB memory, the job needs 16 GiB [MEMORY_TOO_SMALL]']);
  });
  it('a ranked decision lists the market providers that failed a gate, not only the offerers (result.ineligible)', () => {
    const market = { summary: '1 eligible', providers: [{ provider: A, eligible: true, failures: [] }, { provider: B, eligible: false, failures: [{ code: 'MEMORY_TOO_SMALL', message: 'has 8 GiB memory' }] }] };
    const ev: DecisionEvent = { e: 'decision', decision: { result: { ok: true, why: 'x wins', ranked: [], ineligible: [] }, market } };
    const d = decisionView([ev], 'ended', MARKET_NOW);
    assert.equal(d.kind, 'ranked');
    assert.deepEqual(d.kind === 'ranked' ? d.ineligible.lines : [], ['✘ bantamXX…Bant: has 8 GiB memory [MEMORY_TOO_SMALL]']);
  });
  it('a long list is cut with a count of the rest', () => {
    const providers = Array.from({ length: 25 }, (_, i) => ({ provider: `p${i}`, eligible: false, failures: [{ code: 'REGION', message: 'm' }] }));
    const x = ineligibleLines({ result: { ok: false, ranked: [], ineligible: [] }, market: { summary: '', providers } }, 20);
    assert.equal(x.lines.length, 20);
    assert.equal(x.more, 5);
  });
});

describe('an ended job’s empty steps and how it ended (QA qaCon F4, F10)', () => {
  const ended = { job: { record: { deadline: 0 } }, selections: [] as unknown[], receipts: [] as unknown[], acceptances: [] as unknown[], nondeliveries: [] as unknown[] };
  it('a job no provider was selected for says so at selection, receipt and acceptance', () => {
    assert.equal(emptyStepNote('selection', 'ended', ended), 'none: no provider was selected');
    assert.equal(emptyStepNote('receipt', 'ended', ended), 'none: no provider ran it');
    assert.equal(emptyStepNote('acceptance', 'ended', ended), 'none: no receipt to accept');
    assert.equal(emptyStepNote('selection', 'running', ended), undefined, 'nothing while the run goes on');
    const selected = { ...ended, selections: [{}] };
    assert.equal(emptyStepNote('selection', 'ended', selected), undefined);
    assert.equal(emptyStepNote('receipt', 'ended', selected), 'none held: no receipt came from the provider');
  });
  it('a run broken off by the node’s stop or crash says so in its execution step and outcome', () => {
    const o = { status: 'none' as const, code: 'JOB_INTERRUPTED', ending: { status: 'interrupted', code: 'JOB_INTERRUPTED', note: 'this node’s run of it was broken off' } };
    assert.match(executionNote('ended', { ...ended, selections: [{}] }, o)!, /^broken off: .*JOB_INTERRUPTED/);
    assert.deepEqual(outcomeView(o), { status: 'interrupted', text: 'this node’s run of it was broken off (JOB_INTERRUPTED)' });
    assert.deepEqual(outcomeView({ status: 'none', ending: { status: 'no-eligible-provider', note: 'no offer came from an eligible provider' } }), { status: 'no-eligible-provider', text: 'no offer came from an eligible provider' });
    assert.deepEqual(outcomeView({ status: 'none', ending: { status: 'running', note: 'running' } }), { text: 'no outcome held' });
  });
  it('a late failed receipt has no output to miss', () => {
    assert.equal(lateText('failed'), 'late failed: no verdict signed');
    assert.equal(lateText('completed'), 'late completed: output not received');
  });
});
