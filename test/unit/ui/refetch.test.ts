/**
 * The console's fetcher (ui/refetch.ts): a view asked to refetch faster than
 * the daemon answers still shows every answer, with one fetch in flight at a
 * time; a closed view applies nothing.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Refetch, type Outcome } from '../../../ui/refetch.js';

/** A load whose answers the test releases one by one. */
function gate() {
  const waiting: Array<(v: number) => void> = [];
  let calls = 0;
  return {
    load: () => {
      calls++;
      return new Promise<number>((r) => waiting.push(r));
    },
    answer: async (v: number) => {
      const r = waiting.shift();
      assert.ok(r, 'a fetch is in flight');
      r(v);
      await new Promise((r) => setImmediate(r));
    },
    get calls() {
      return calls;
    },
    get inFlight() {
      return waiting.length;
    },
  };
}

describe('Refetch', () => {
  it('asked again while a fetch is in flight: the answer is shown, then one more fetch follows', async () => {
    const g = gate();
    const shown: Array<[Outcome<number>, boolean]> = [];
    const f = new Refetch(g.load, (o, more) => shown.push([o, more]));
    f.request();
    // The feed says "changed" three times before the daemon answers (a busy node).
    f.request();
    f.request();
    f.request();
    assert.equal(g.calls, 1, 'one fetch in flight, not four');
    await g.answer(1);
    // The first answer is shown (the console used to drop it), marked as not the last.
    assert.deepEqual(shown, [[{ data: 1 }, true]]);
    assert.equal(g.calls, 2, 'the three requests made one more fetch');
    f.request();
    await g.answer(2);
    assert.deepEqual(shown.at(-1), [{ data: 2 }, true]);
    await g.answer(3);
    assert.deepEqual(shown.at(-1), [{ data: 3 }, false]);
    assert.equal(g.calls, 3);
    assert.equal(g.inFlight, 0);
    // Idle again: the next request fetches at once.
    f.request();
    assert.equal(g.calls, 4);
  });

  it('a failed fetch is shown as an error and the fetcher goes on', async () => {
    let n = 0;
    const shown: Array<Outcome<number>> = [];
    const f = new Refetch(
      async () => {
        if (++n === 1) throw new Error('HTTP 503');
        return n;
      },
      (o) => shown.push(o),
    );
    f.request();
    await new Promise((r) => setImmediate(r));
    f.request();
    await new Promise((r) => setImmediate(r));
    assert.equal(shown.length, 2);
    assert.match(String((shown[0] as { error: Error }).error), /HTTP 503/);
    assert.deepEqual(shown[1], { data: 2 });
  });

  it('closed (the view went away or shows another path): the answer in flight is not applied and nothing more is fetched', async () => {
    const g = gate();
    const shown: unknown[] = [];
    const f = new Refetch(g.load, (o) => shown.push(o));
    f.request();
    f.request();
    f.close();
    await g.answer(1);
    f.request();
    assert.deepEqual(shown, []);
    assert.equal(g.calls, 1);
  });
});
