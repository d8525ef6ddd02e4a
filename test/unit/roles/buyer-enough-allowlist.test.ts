/**
 * A job's collection window ends once every provider its allowlist names has offered (offersToWaitFor): no other
 * provider's offer can pass its gates. Before, a `train buy` member job (an allowlist of one) with `buyer.enoughOffers`
 * 0 waited out the whole window, and with 3 (startOrg's) waited for offers that could not come.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { enoughEnd, offersToWaitFor } from '../../../src/roles/buyer.js';
import { P } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const [A, B] = [P(781), P(782)];

describe('offers waited for', () => {
  it('is buyer.enoughOffers, capped at the providers the allowlist names (0: all of them)', () => {
    assert.equal(offersToWaitFor(0, { requirements: {} }), 0);
    assert.equal(offersToWaitFor(3, { requirements: {} }), 3);
    assert.equal(offersToWaitFor(0, { requirements: { allowlist: [A.did] } }), 1);
    assert.equal(offersToWaitFor(3, { requirements: { allowlist: [A.did, B.did, A.did] } }), 2);
    assert.equal(offersToWaitFor(1, { requirements: { allowlist: [A.did, B.did] } }), 1);
  });

  it('the buyer asks its market for that many', async () => {
    const asked: number[] = [];
    const f = buyerOnFakes(P(780), {
      providers: [A],
      exec: async function* () {
        yield { t: 'refused', code: 'EXEC_BUSY', message: 'busy' };
      },
      deps: { enoughOffers: 0, waitForOffers: async (_j: string, _w: number, enough: number) => (asked.push(enough), { offers: 1, ended: 'enough' as const }) },
    });
    await f.buyer.run(fakeSpec({ requirements: { allowlist: [A.did] } }));
    // before: 0, the whole window
    assert.deepEqual(asked, [1]);
  });

  it('a window the allowlist ended says so (`allowlist`), not "enough offers (buyer.enoughOffers)" with buyer.enoughOffers at 0', async () => {
    assert.equal(enoughEnd(0, { requirements: { allowlist: [A.did] } }), 'allowlist');
    assert.equal(enoughEnd(3, { requirements: { allowlist: [A.did, B.did, A.did] } }), 'allowlist', 'fewer named than buyer.enoughOffers');
    assert.equal(enoughEnd(2, { requirements: { allowlist: [A.did, B.did] } }), 'enough', 'both hold: buyer.enoughOffers is named');
    assert.equal(enoughEnd(1, { requirements: { allowlist: [A.did, B.did] } }), 'enough');
    assert.equal(enoughEnd(2, { requirements: {} }), 'enough');
    const ended = async (enoughOffers: number, allowlist?: string[]) => {
      const events: Array<{ e: string; ended?: string }> = [];
      const f = buyerOnFakes(P(780), {
        providers: [A, B],
        exec: async function* () {
          yield { t: 'refused', code: 'EXEC_BUSY', message: 'busy' };
        },
        deps: { enoughOffers, waitForOffers: async () => ({ offers: 1, ended: 'enough' as const }) },
      });
      await f.buyer.run(fakeSpec(allowlist ? { requirements: { allowlist } } : {}), (e) => void events.push(e as { e: string; ended?: string }));
      return events.find((e) => e.e === 'collected')?.ended;
    };
    assert.equal(await ended(0, [A.did]), 'allowlist');
    assert.equal(await ended(1, [A.did, B.did].sort()), 'enough');
    assert.equal(await ended(1), 'enough');
  });
});
