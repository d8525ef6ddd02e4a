/**
 * `c0mpute market`'s presence line and a pool's entry (QA qaPnet F8): presence is per machine, so a pool of three
 * members present counts three providers live with all their free slots, while the market lists the pool once. The line
 * said "3 providers live, 6 free slots" above the pool's entry with "2 free slots" (its newest advert's member alone),
 * which read as a contradiction. Now the line says how many of them are members of how many pools, and the pool's entry
 * gives the free slots of its members present, so the two add up.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { advertPresence, presenceLine } from '../../../src/cli/commands/node.js';
import { poolPresence, presenceCounts } from '../../../src/node/control.js';

describe('c0mpute market: presence beside pools', () => {
  const pool = 'did:key:zPool';
  const members = ['did:key:zM1', 'did:key:zM2', 'did:key:zM3'];
  const solo = 'did:key:zSolo';
  const idx = { entryOf: (s: string) => (members.includes(s) ? pool : s) };
  const present = [...members.map((did) => ({ did, freeSlots: 2 })), { did: solo, freeSlots: 1 }];

  it('counts the members present of each pool and their free slots together', () => {
    const pools = poolPresence(idx, present);
    assert.deepEqual([...pools], [[pool, { present: 3, freeSlots: 6 }]]);
    assert.deepEqual(presenceCounts(present, pools), { live: 4, freeSlots: 7, pooled: { members: 3, pools: 1 } });
    // no pool: the counts as before, nothing added
    assert.deepEqual(presenceCounts([{ freeSlots: 1 }], new Map()), { live: 1, freeSlots: 1 });
  });

  it('the presence line says how many of the providers live are members of a pool', () => {
    assert.equal(presenceLine({ live: 3, freeSlots: 6, pooled: { members: 3, pools: 1 } }), 'presence  3 providers live (3 of them members of 1 pool), 6 free slots');
    assert.equal(presenceLine({ live: 4, freeSlots: 7, pooled: { members: 1, pools: 1 } }), 'presence  4 providers live (1 of them member of 1 pool), 7 free slots');
    // without pools (or from a daemon before `pooled`), as before
    assert.equal(presenceLine({ live: 3, freeSlots: 6 }), 'presence  3 providers live, 6 free slots');
  });

  it('a pool’s entry gives its members present and their free slots; a provider its own', () => {
    assert.equal(advertPresence({ live: true, freeSlots: 2, pool: { present: 3, freeSlots: 6 } }, true), '  present (3 members), 6 free slots');
    assert.equal(advertPresence({ live: true, freeSlots: 1 }, true), '  present, 1 free slot');
    // a daemon before pool.freeSlots: the entry's member's, as before
    assert.equal(advertPresence({ live: true, freeSlots: 2, pool: {} }, true), '  present, 2 free slots');
    assert.equal(advertPresence({ live: true }, true), '  not present now');
    assert.equal(advertPresence({ live: true }, false), '');
  });
});
