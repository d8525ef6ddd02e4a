/** `c0mpute market` says how many adverts the new-advertiser flood limit turned away since start (QA qaWit F4). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { turnedAwayLine } from '../../../src/cli/commands/node.js';

test('the market line for adverts turned away at the door: the count, the code, and what it means', () => {
  assert.equal(turnedAwayLine(148), '⚠ 148 adverts from new advertisers turned away by the new-advertiser rate limit since start [NET_NEW_ADVERTISER_LIMIT]: those providers are missing here until their adverts are heard again');
  assert.match(turnedAwayLine(1), /^⚠ 1 advert from new advertisers/);
});
