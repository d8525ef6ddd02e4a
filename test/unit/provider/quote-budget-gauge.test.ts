/**
 * The quoting budget's live-offer gauge (`c0mpute_provider_live_offers`, "Unexpired offers this provider has
 * signed") is true when scraped, and expired offers leave the budget when they expire, not when the next job
 * happens to reach the budget check (on a quiet market, or with every slot busy, none may).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { QuoteBudget } from '../../../src/roles/provider/quote-budget.js';
import { fakeClock } from '../../../src/util/clock.js';
import { watchTimers } from '../util/timer-watch.js';

async function gauge(reg: Registry): Promise<number | undefined> {
  return (await reg.getSingleMetric('c0mpute_provider_live_offers')?.get())?.values[0]?.value;
}

describe('QuoteBudget: live offers', () => {
  const budgets: QuoteBudget[] = [];
  after(() => budgets.forEach((b) => b.close()));

  test('the gauge counts only unexpired offers at scrape time, with no job heard since they expired', async () => {
    const reg = new Registry();
    const clock = fakeClock(1_800_000_000_000);
    const b = new QuoteBudget<string>({ registry: reg, clock });
    budgets.push(b);
    b.add({ job: 'j1', buyer: 'b1', expiresAt: clock() + 5_000, record: 'o1' });
    b.add({ job: 'j2', buyer: 'b2', expiresAt: clock() + 20_000, record: 'o2' });
    assert.equal(await gauge(reg), 2);
    clock.advance(6_000);
    assert.equal(await gauge(reg), 1, 'the first offer expired: not live any more');
    clock.advance(15_000);
    assert.equal(await gauge(reg), 0);
  });

  test('an expired offer leaves the budget (and its signed record is dropped) when it expires, without a job or a scrape', async () => {
    const b = new QuoteBudget<string>({ maxLiveOffers: 1, clock: Date.now });
    budgets.push(b);
    b.add({ job: 'j1', buyer: 'b1', expiresAt: Date.now() + 30, record: 'o1' });
    assert.equal(b.held, 1);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(b.held, 0, 'freed by the budget’s own timer');
  });
  test('an offer living past the longest timer (2^31-1 ms) arms one timer at that bound, not one firing every millisecond', async () => {
    const clock = fakeClock(1_800_000_000_000);
    const b = new QuoteBudget<string>({ clock });
    budgets.push(b);
    const { armed, restore } = watchTimers();
    try {
      b.add({ job: 'j1', buyer: 'b1', expiresAt: clock() + 60 * 86_400_000, record: 'o1' });
    } finally {
      restore();
    }
    assert.deepEqual(armed, [2 ** 31 - 1]);
    assert.equal(b.held, 1);
  });
});
