/**
 * The console's routes (ui/route.ts), against QA (session 49): unknown routes showed the Overview with no view
 * highlighted, `#/market?x=1` too; the skip link's `#main` went to the Overview; an empty, garbage or shortened
 * job/record address got the daemon's bare errors.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { addressProblem, parseRoute, sectionOf } from '../../../ui/route.js';

const ADDR = `sha256:${'ab'.repeat(32)}`;

describe('console routes', () => {
  it('the views, with a query ignored', () => {
    assert.deepEqual(parseRoute(''), { view: 'overview' });
    assert.deepEqual(parseRoute('#/'), { view: 'overview' });
    assert.deepEqual(parseRoute('#/market'), { view: 'market' });
    assert.deepEqual(parseRoute('#/market?x=1'), { view: 'market' });
    assert.deepEqual(parseRoute('#/jobs'), { view: 'jobs' });
    assert.deepEqual(parseRoute('#/jobs/'), { view: 'jobs' });
    assert.deepEqual(parseRoute(`#/jobs/${encodeURIComponent(ADDR)}/org`), { view: 'jobs', arg: ADDR, overlay: 'org' });
    assert.deepEqual(parseRoute(`#/record/${ADDR}`), { view: 'record', arg: ADDR });
    assert.equal(sectionOf({ view: 'record', arg: ADDR }), 'jobs');
  });
  it('the skip link target is no route: the view stays', () => {
    assert.equal(parseRoute('#main'), undefined);
  });
  it('an unknown route, or a later one, is no page, with no view highlighted', () => {
    for (const h of ['#/nonsense', '#/market/x', '#/%E0%A4%A', '#/overview/1']) {
      const r = parseRoute(h);
      assert.equal(r?.view, 'not-found', h);
      assert.equal(sectionOf(r!), undefined);
    }
    assert.deepEqual(parseRoute('#/pools'), { view: 'not-found', path: 'pools', later: true });
  });
  it('an empty, shortened or garbage address says what is wrong', () => {
    assert.match((parseRoute('#/record/') as { problem: string }).problem, /^no address given/);
    assert.match((parseRoute('#/record') as { problem: string }).problem, /^no address given/);
    assert.match((parseRoute('#/record/sha256:fffe0a7c') as { problem: string }).problem, /is a shortened address/);
    assert.match((parseRoute('#/jobs/garbage') as { problem: string }).problem, /^"garbage" is not a record address/);
    assert.equal(parseRoute('#/jobs/garbage')?.view, 'bad-address');
    assert.equal(addressProblem(ADDR), undefined);
  });
});
