/**
 * A member a newer roster removed takes no part in the pool's election, and its status does not name it coordinator
 * (src/roles/pool-member/member.ts status; QA ffPoolChurn F4: `pool-provider status` on a removed member printed
 * "coordinator <itself>" above "removed by roster seq 3", reckoned on the roster it still held, where it counted
 * itself live and the others, on the newer roster, gone). Three members over their own stores (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Rig, MEMBERS, clock } from './member-rig.js';
import { roster } from './helpers.js';
import { P, advert } from '../market/fixtures.js';

const rig = new Rig();
const [A, B, X] = MEMBERS as [string, string, string];
const r2 = roster({ seq: 2, members: [{ did: A }, { did: B }] });

describe('a member removed by a newer roster', () => {
  after(() => rig.close());

  test('hearing the roster that removes it, a running member withdraws its pooled advert at once: signed again as its own', async () => {
    let changed = 0;
    const w = await rig.world('removed-advert', { extra: (did) => (did === X ? { onRosterChanged: () => void changed++ } : {}) });
    const x = w.members.get(X)!;
    await x.start();
    x.stop();
    const own = advert(P(40)).record;
    assert.ok(x.advert(own).pool, 'a member: the pool’s advert');
    // a member on the newer roster pushes it (op: roster), as one that adopted it does
    await x.serve({ op: 'roster', roster: r2.bytes }, A);
    assert.equal(changed, 1, 'its provider is told to sign its advert again');
    assert.equal(x.advert(own).pool, undefined, 'removed: its own advert, without the pool proof');
    assert.deepEqual(x.advert(own), own);
    await x.serve({ op: 'roster', roster: r2.bytes }, B);
    assert.equal(changed, 1, 'told once');
  });

  test('its status never names it coordinator: none while it hears nobody, else one of the others', async () => {
    const w = await rig.world('removed-status');
    const x = await rig.addMember(w, 'removed-status', X, { extra: () => ({ removedBy: r2 }) });
    w.down.add(A);
    w.down.add(B);
    await x.start();
    x.stop();
    type St = { removed: boolean; quoting: boolean; coordinator?: string; nextCoordinator?: string };
    const alone = (await x.status()) as St;
    assert.deepEqual([alone.removed, alone.quoting], [true, false]);
    assert.equal(x.elected().coordinator, X, 'reckoned on the roster it holds, alone, it would elect itself');
    assert.equal(alone.coordinator, undefined, 'its status names nobody');
    assert.equal(alone.nextCoordinator, undefined);
    // the others back: one of them, whatever the epoch
    w.down.clear();
    for (let e = 0; e < 6; e++) {
      clock.advance(r2.record.epochMs);
      // a start pings the others: live again at this epoch
      await x.start();
      x.stop();
      const st = (await x.status()) as St;
      assert.ok(st.coordinator === A || st.coordinator === B, `epoch ${e}: ${st.coordinator}`);
      assert.notEqual(st.nextCoordinator, X);
    }
  });
});
