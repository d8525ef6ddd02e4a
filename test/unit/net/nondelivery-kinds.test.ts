/**
 * The one list of non-delivery kinds (NONDELIVERY_TOPIC_KINDS, NONDELIVERY_TYPES) matches the topic table, and every
 * place that means "all of them" holds the same kinds it listed by hand before.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isNonDeliveryKind, NONDELIVERY_TOPIC_KINDS, SHARDED_KINDS, TOPIC_KINDS, TOPIC_TYPES } from '../../../src/net/topics.js';
import { BY_JOB_KINDS } from '../../../src/net/records-protocol.js';
import { FLOOD_DEFAULTS } from '../../../src/net/flood-limits.js';
import { OUTCOME_EVIDENCE_KINDS } from '../../../src/node/markets.js';
import { NONDELIVERY_TYPES, T } from '../../../src/records/kinds.js';
import { isNonDeliveryType } from '../../../src/reputation/nondelivery.js';

test('non-delivery kinds: each topic kind carries its version, and no other topic carries one', () => {
  assert.deepEqual(NONDELIVERY_TOPIC_KINDS, ['nondelivery', 'nondelivery2', 'nondelivery3']);
  assert.deepEqual(NONDELIVERY_TYPES, [T.nondelivery, T.nondelivery2, T.nondelivery3]);
  assert.deepEqual(NONDELIVERY_TOPIC_KINDS.map((k) => TOPIC_TYPES[k]), [...NONDELIVERY_TYPES]);
  assert.deepEqual(TOPIC_KINDS.filter((k) => isNonDeliveryType(TOPIC_TYPES[k])), [...NONDELIVERY_TOPIC_KINDS]);
  assert.deepEqual(TOPIC_KINDS.filter(isNonDeliveryKind), [...NONDELIVERY_TOPIC_KINDS]);
});

test('non-delivery kinds: the lists of all of them hold what they held by hand', () => {
  assert.deepEqual(SHARDED_KINDS, ['advert', 'job', 'presence', 'selection', 'receipt', 'acceptance', 'nondelivery', 'nondelivery2', 'nondelivery3']);
  assert.deepEqual(BY_JOB_KINDS, ['offer', 'selection', 'receipt', 'nondelivery', 'nondelivery2', 'nondelivery3']);
  assert.deepEqual(OUTCOME_EVIDENCE_KINDS, ['receipt', 'acceptance', 'nondelivery', 'nondelivery2', 'nondelivery3']);
  for (const k of NONDELIVERY_TOPIC_KINDS) assert.deepEqual(FLOOD_DEFAULTS.signer[k], { ratePerSec: 10, burst: 60 });
  assert.notEqual(FLOOD_DEFAULTS.signer.nondelivery, FLOOD_DEFAULTS.signer.nondelivery2, 'each kind its own bucket spec');
});
