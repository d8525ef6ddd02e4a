/**
 * The provider's log says a claim the buyer's node answered with an error frame that judged it (ORDER_UNKNOWN,
 * NODE_CLOSING) was answered, not "claim not answered" (QA qaOrd F7): only a claim that got no answer reads so.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { C0Error } from '../../../src/errors.js';
import { pino } from 'pino';
import { claimerFor } from './claimer-rig.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const PROV = P(1);
const BUYER = P(100);
const ad = advert(PROV, { prices: [{ workload: W, unit: 'job', price: { amount: '0.1', currency: 'USD' } }], expiresAt: NOW + 7_200_000 });
const turn = () => new Promise((r) => setImmediate(r));

describe('the claimer’s log of an answer that is an error frame', () => {
  for (const [code, said] of [
    ['ORDER_UNKNOWN', /^claim answered ORDER_UNKNOWN: the buyer takes no claims on this job/],
    ['NODE_CLOSING', /^claim answered NODE_CLOSING: the buyer’s node is stopping/],
  ] as const) {
    it(`${code} is logged as the buyer's answer`, async () => {
      const lines: Array<{ msg: string; code?: string }> = [];
      const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as { msg: string }) });
      const orders = new OpenOrders();
      orders.add(job(BUYER, { nonce: new Uint8Array([1, 9]), order: { designated: PROV.did }, announcedAt: NOW - 1000, deadline: NOW + 3_600_000 }), NOW);
      const claimer = claimerFor(PROV, ad, orders, {
        log,
        send: async () => {
          throw new C0Error(code, 'answered');
        },
      });
      try {
        claimer.tick();
        await turn();
        await turn();
        const line = lines.find((l) => l.code === code);
        assert.ok(line, JSON.stringify(lines));
        assert.match(line.msg, said);
        assert.ok(!lines.some((l) => l.msg === 'claim not answered'), JSON.stringify(lines));
      } finally {
        claimer.stop();
      }
    });
  }
});
