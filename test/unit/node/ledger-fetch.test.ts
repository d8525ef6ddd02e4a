/**
 * Fetching a steward's ledger (src/node/ledger-fetch.ts; GET /v1/ledger/:steward, `c0mpute ledger fetch`): the fetch
 * is bounded in bytes and in time however the steward answers, and each entry must chain as it comes. The "steward"
 * is a fake ledger/1 requester: an honest one serving a sealed chain by range, and hostile ones answering full
 * ranges of junk, full ranges of valid entries for ever, or never.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Ed25519Signer, didFromPublicKey } from '../../../src/records/index.js';
import { sealEntries, WITNESS_TYPE } from '../../../src/ledger/index.js';
import { seal } from '../../../src/records/envelope.js';
import { decodeLedgerFile, encodeLedgerFile } from '../../../src/ledger/file.js';
import { verifyLedger } from '../../../src/ledger/verify.js';
import { MAX_LEDGER_RANGE } from '../../../src/roles/steward-ports.js';
import { OverlayNode } from '../../../src/node/overlay.js';
import { fetchLedgerEntries, LEDGER_FETCH_ERR, parseFetchMiB } from '../../../src/node/ledger-fetch.js';
import type { Network } from '../../../src/net/node.js';
import type { CborValue } from '../../../src/records/cbor.js';
import { admitted, steward as stewardKey } from '../ledger/helpers.js';

const S = didFromPublicKey(stewardKey.publicKey);
// 2,500 entries: two full ranges and a short one
const chain = sealEntries(Array.from({ length: 2500 }, (_, i) => admitted(`c${i}`)), stewardKey).map((e) => e.bytes);
const chainBytes = chain.reduce((n, b) => n + b.length, 0);

type Req = { from: number };
type Opts = { signal?: AbortSignal; limits?: { maxResponseBytes?: number } };
function requester(serve: (r: Req, o: Opts) => Promise<CborValue[]> | CborValue[]): Pick<Network, 'request'> & { calls: Req[] } {
  const calls: Req[] = [];
  return {
    calls,
    request: (async (_did: string, _p: string, frames: CborValue[], o: Opts) => {
      const r = frames[0] as unknown as Req;
      calls.push(r);
      if (calls.length > 100) throw new Error('the fetch did not stop: over 100 range calls');
      return serve(r, o);
    }) as never,
  };
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return (e as { code?: string }).code ?? (e as Error).message;
  }
  return 'no error';
}

describe('fetching a steward’s ledger', () => {
  it('fetches an honest ledger whole, range by range', async () => {
    const net = requester(({ from }) => chain.slice(from, from + MAX_LEDGER_RANGE));
    const got = await fetchLedgerEntries(net, S);
    assert.equal(got.length, chain.length);
    assert.deepEqual(net.calls.map((c) => c.from), [0, 1024, 2048]);
    assert.deepEqual(got[2499], chain[2499]);
  });

  it('stops at the byte bound when the steward answers full ranges of valid entries (LEDGER_FETCH_TOO_LARGE)', async () => {
    const net = requester(({ from }) => chain.slice(from, from + MAX_LEDGER_RANGE));
    const maxBytes = Math.floor(chainBytes / 2);
    assert.equal(await code(fetchLedgerEntries(net, S, { maxBytes })), LEDGER_FETCH_ERR.TOO_LARGE);
    assert.ok(net.calls.length <= 2, `asked ${net.calls.length} ranges`);
  });

  it('asks no range for more than what is left of the bound', async () => {
    const caps: number[] = [];
    const net = requester(({ from }, o) => {
      caps.push(o.limits?.maxResponseBytes ?? Infinity);
      return chain.slice(from, from + MAX_LEDGER_RANGE);
    });
    const maxBytes = chainBytes + 1000;
    await fetchLedgerEntries(net, S, { maxBytes });
    assert.ok(caps[0]! <= maxBytes + MAX_LEDGER_RANGE * 16 && caps[2]! < caps[0]!, `caps ${caps.join(', ')}`);
  });

  it('refuses full ranges of junk at the first frame, after one call (LEDGER_FETCH_BROKEN)', async () => {
    const junk = new Uint8Array(1000);
    const net = requester(() => Array.from({ length: MAX_LEDGER_RANGE }, () => junk));
    const err = await fetchLedgerEntries(net, S).catch((e: unknown) => e as { code: string; detail: { index: number } });
    assert.equal((err as { code: string }).code, LEDGER_FETCH_ERR.BROKEN);
    assert.equal((err as { detail: { index: number } }).detail.index, 0);
    assert.equal(net.calls.length, 1);
  });

  it('refuses an entry that does not chain: another steward’s, a gap, a rewritten link', async () => {
    const other = Ed25519Signer.generate();
    const foreign = sealEntries([admitted('x')], other).map((e) => e.bytes);
    const forked = sealEntries(Array.from({ length: 3 }, (_, i) => admitted(`fork${i}`)), stewardKey).map((e) => e.bytes);
    const cases: Array<[string, Uint8Array[], number]> = [
      ['foreign signer', [chain[0]!, ...foreign], 1],
      ['gap', [chain[0]!, chain[2]!], 1],
      ['rewritten link', [chain[0]!, chain[1]!, forked[2]!], 2],
    ];
    for (const [what, served, index] of cases) {
      const net = requester(() => served);
      const err = (await fetchLedgerEntries(net, S).catch((e: unknown) => e)) as { code: string; detail: { index: number } };
      assert.equal(err.code, LEDGER_FETCH_ERR.BROKEN, what);
      assert.equal(err.detail.index, index, what);
    }
  });

  it('gives up at its whole-time budget when the steward never answers (LEDGER_FETCH_TIMEOUT)', async () => {
    const net = requester(
      (_r, o) =>
        new Promise((_, reject) => {
          // an open connection keeps a daemon's event loop alive (AbortSignal.timeout's timer does not)
          const alive = setInterval(() => {}, 1000);
          o.signal?.addEventListener('abort', () => (clearInterval(alive), reject(new Error('aborted'))), { once: true });
        }),
    );
    assert.equal(await code(fetchLedgerEntries(net, S, { budgetMs: 50 })), LEDGER_FETCH_ERR.TIMEOUT);
  });

  it('OverlayNode.fetchLedger is bounded too (the endless-ranges repro)', async () => {
    const net = requester(() => Array.from({ length: MAX_LEDGER_RANGE }, () => new Uint8Array(60 * 1024)));
    const fake = { d: { network: {} }, net, records: { witnessReceiptsFor: async () => [] } };
    assert.equal(await code(OverlayNode.prototype.fetchLedger.call(fake as never, S)), LEDGER_FETCH_ERR.BROKEN);
    assert.equal(net.calls.length, 1);
  });

  it('OverlayNode.fetchLedger: a head appended and cosigned while the entries come gives no receipt past them (QA ffLedger F2)', async () => {
    // the steward's ledger grows by one entry, and a witness cosigns it, while the range is being served
    const witness = Ed25519Signer.generate();
    const grown = sealEntries(Array.from({ length: 4 }, (_, i) => admitted(`g${i}`)), stewardKey);
    const receiptAt = (n: number) => seal(WITNESS_TYPE, { steward: S, length: n, head: grown[n - 1]!.address, witnessedAt: 1_000 + n } as never, witness);
    let length = 3;
    const heard = [receiptAt(3)];
    const net = requester(({ from }) => {
      const served = grown.slice(from, length).map((e) => e.bytes);
      length = 4;
      heard.push(receiptAt(4));
      return served;
    });
    const fake = { d: { network: {} }, net, records: { witnessReceiptsFor: async () => [...heard] } };
    const raw = await OverlayNode.prototype.fetchLedger.call(fake as never, S);
    const rep = verifyLedger(decodeLedgerFile(encodeLedgerFile(raw)));
    assert.equal(rep.problem?.code, undefined, rep.problem?.message);
    assert.equal(rep.replay.length, 3);
    assert.equal(rep.attestation.grade, 'witnessed');
  });

  it('takes ?maxMiB= from 1 to 256 only', () => {
    assert.equal(parseFetchMiB(null), undefined);
    assert.equal(parseFetchMiB('256'), 256);
    for (const bad of ['0', '257', '-1', '1.5', 'x', '']) assert.throws(() => parseFetchMiB(bad), { code: LEDGER_FETCH_ERR.BAD_LIMIT }, bad);
  });
});
