/**
 * The console's shared clock (ui/clock.ts): QA (session 49) found "15 s ago" frozen on the Jobs view, which redraws
 * only on the feed's events. Views showing relative times now redraw on a ticker: one timer per period however many
 * views use it, the time passed to each, and no timer left once the last view has gone.
 */
import { describe, it, mock } from 'node:test';
import assert from 'node:assert/strict';
import { Ticker } from '../../../ui/clock.js';

describe('the console clock', () => {
  it('ticks each subscriber with the time, one timer per period, none left after the last unsubscribes', () => {
    mock.timers.enable({ apis: ['setInterval', 'Date'], now: 1_000_000 });
    try {
      // the default timers, called as a browser calls them (a bare setInterval as a method threw 'Illegal invocation' there)
      const t = new Ticker(() => Date.now());
      const seen: string[] = [];
      const a = t.subscribe(1000, (now) => seen.push(`a ${now}`));
      const b = t.subscribe(1000, (now) => seen.push(`b ${now}`));
      const c = t.subscribe(5000, () => seen.push('c'));
      assert.equal(t.running, 2);
      mock.timers.tick(1000);
      assert.deepEqual(seen, ['a 1001000', 'b 1001000']);
      a();
      for (let i = 0; i < 4; i++) mock.timers.tick(1000);
      assert.deepEqual(seen.slice(2), ['b 1002000', 'b 1003000', 'b 1004000', 'b 1005000', 'c']);
      b();
      c();
      assert.equal(t.running, 0);
      mock.timers.tick(10_000);
      assert.equal(seen.length, 7, 'nothing ticks after unsubscribing');
    } finally {
      mock.timers.reset();
    }
  });
});
