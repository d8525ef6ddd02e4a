/**
 * `provider.slots` is held to what a presence can say (`freeSlots` ≤ 65,536). Before (QA ffMatchDay2 F3), 70,000 was
 * taken: the daemon started its network, published its advert, then stopped at its first presence with
 * `RECORD_FIELD_INVALID: freeSlots: must be ≤ 65536`, naming a record field the operator never wrote (and leaving peers
 * an advert of a provider that was gone).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { C0Error } from '../../../src/errors.js';
import { parseConfig } from '../../../src/node/config.js';
import { MAX_PRESENCE_FREE_SLOTS } from '../../../src/records/kinds.js';

test('provider.slots past what a presence can say is CONFIG_INVALID naming provider.slots; the limit itself parses', () => {
  assert.throws(
    () => parseConfig({ provider: { slots: MAX_PRESENCE_FREE_SLOTS + 1 } }),
    (e: C0Error) => e.code === 'CONFIG_INVALID' && /provider\.slots/.test(e.message),
  );
  assert.equal(parseConfig({ provider: { slots: MAX_PRESENCE_FREE_SLOTS } }).provider?.slots, MAX_PRESENCE_FREE_SLOTS);
});
