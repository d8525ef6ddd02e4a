/**
 * The output guard (src/roles/provider/output-guard.ts; docs/node.md "Provider", docs/pools.md "The output guard"):
 * empty or whitespace-only output is no output, for a solo provider (a failed receipt, EXEC_EMPTY_OUTPUT) as for a pool
 * (POOL_OUTPUT_EMPTY). Before, a solo provider whose command printed only whitespace signed `completed`, the buyer
 * accepted it and the provider's reputation went up (QA qaRep F3). The provider runs builtin.sleep, which echoes its
 * input, over a real LevelDB; the clocks are fakes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Opened } from '../../../src/records/envelope.js';
import type { Offer, Receipt } from '../../../src/records/kinds.js';
import { fakeClock } from '../../../src/util/clock.js';
import { Provider } from '../../../src/roles/provider/provider.js';
import { blankOutputText, isBlankOutput } from '../../../src/roles/provider/output-guard.js';
import type { ExecFrame } from '../../../src/roles/exec-protocol.js';
import { NOW, runsConfig, runsDeps, runsJob, selectionOf, withStore } from './runs-rig.js';

const utf8 = (s: string) => new TextEncoder().encode(s);

test('isBlankOutput: empty, ASCII and Unicode whitespace and a lone byte-order mark are blank; any other character, a NUL or bytes that are not UTF-8 are not', () => {
  for (const s of ['', ' ', '   \n\t \n', '\r\n\v\f', '\u00a0', ' \u2028\u3000 ', '\ufeff', '\ufeff \n']) assert.equal(isBlankOutput(utf8(s)), true, JSON.stringify(s));
  for (const s of ['0', ' x ', '\n.\n', ' \u00a0é', '\u200b']) assert.equal(isBlankOutput(utf8(s)), false, JSON.stringify(s));
  assert.equal(isBlankOutput(Uint8Array.of(0)), false, 'NUL');
  assert.equal(isBlankOutput(Uint8Array.of(0x20, 0xc2)), false, 'a character cut short');
  assert.equal(isBlankOutput(Uint8Array.of(0x20, 0xff, 0x20)), false, 'not UTF-8');
  // a non-ASCII space across the decoder's chunks, then a character after a long blank run
  const long = new Uint8Array(200_000).fill(0x20);
  long.set(utf8('\u3000'), 65_535);
  assert.equal(isBlankOutput(long), true);
  long[199_999] = 0x41;
  assert.equal(isBlankOutput(long), false);
  assert.deepEqual([blankOutputText(utf8('')), blankOutputText(utf8(' ')), blankOutputText(utf8(' \n')), blankOutputText(utf8('ok'))], ['no output', 'only whitespace (1 byte)', 'only whitespace (2 bytes)', undefined]);
});

async function runSleep(input: Uint8Array): Promise<Opened<Receipt>> {
  let receipt: Opened<Receipt> | undefined;
  await withStore('output-guard', async (runs) => {
    const wall = fakeClock(NOW);
    const p = new Provider({ ...runsDeps(runs, wall), config: runsConfig(['builtin.sleep']), publish: async () => 1, onReceipt: async (r) => void (receipt = r) });
    await p.start();
    const j = runsJob('builtin.sleep', input, '0');
    const offer = (await p.onJob(j)) as Opened<Offer>;
    assert.ok(offer, 'offered');
    const frames: ExecFrame[] = [];
    const queue: unknown[] = [{ t: 'exec', selection: selectionOf(j, offer).bytes, job: j.bytes, offer: offer.bytes, input }];
    await p.handleExec({ next: async () => queue.shift(), send: async (f) => void frames.push(f as ExecFrame), signal: new AbortController().signal, reserve: () => {}, setDeadline: () => {} });
    assert.equal(frames.some((f) => f.t === 'output'), receipt?.record.status === 'completed', 'output is sent with a completed receipt only');
    await p.stop();
  });
  assert.ok(receipt, 'a receipt was signed');
  return receipt;
}

test('a solo provider whose work prints only whitespace signs a failed receipt (EXEC_EMPTY_OUTPUT), never completed', async () => {
  const r = await runSleep(utf8('   \n\t \n'));
  assert.equal(r.record.status, 'failed');
  assert.equal(r.record.failure?.code, 'EXEC_EMPTY_OUTPUT');
  assert.equal(r.record.failure?.message, 'the work produced only whitespace (7 bytes): work not done');
  assert.equal(r.record.outputHash, undefined);
  // the same work with something in it completes
  const ok = await runSleep(utf8(' hello \n'));
  assert.equal(ok.record.status, 'completed');
});
