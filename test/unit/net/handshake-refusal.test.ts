/**
 * An inbound connection that closes before its handshake on a private overlay (src/net/refusals.ts,
 * docs/network.md "Refused connections on private overlays"): the log hints at a wrong swarm key only when the
 * handshake came garbled, which is what a wrong key does (the pre-shared-key layer scrambles multistream-select and
 * noise: EncryptionFailedError "Message length length too long"), not when it timed out (a node resumed after
 * SIGSTOP, a slow peer) or the peer went away (a dial that gave up, a reset, a port scan). Before, every such close
 * was logged as "refused a connection whose handshake failed (a wrong swarm key?)".
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MultiaddrConnection } from '@libp2p/interface';
import { handshakeFailure, overlayGater, RefusalLog } from '../../../src/net/refusals.js';
import { silentLogger, type Logger } from '../../../src/util/log.js';

const named = (name: string, message: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(message), { name }, extra);

// The error shapes measured on libp2p 3.3 (an inbound connection's close event, by what the other side did).
const WRONG_KEY = named('EncryptionFailedError', 'Message length length too long - 8 > 2');
const GARBAGE = named('EncryptionFailedError', 'Message length length too long - 3 > 2');
const SILENT = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
const TIMEOUT_WRAPPED = named('EncryptionFailedError', 'The operation was aborted due to timeout');
const ABORTED = named('AbortError', 'The operation was aborted');
const RESET = named('Error', 'read ECONNRESET', { code: 'ECONNRESET' });
const EOF = named('EncryptionFailedError', 'Unexpected EOF - stream closed after reading 0/24 bytes');

test('handshakeFailure: garbled (a wrong key) vs timed out vs the peer gone', () => {
  assert.equal(handshakeFailure(WRONG_KEY), 'garbled');
  assert.equal(handshakeFailure(GARBAGE), 'garbled');
  assert.equal(handshakeFailure(named('InvalidCryptoExchangeError', 'Failed to decrypt the noise handshake')), 'garbled');
  assert.equal(handshakeFailure(named('UnsupportedProtocolError', 'protocol selection failed')), 'garbled');
  assert.equal(handshakeFailure(SILENT), 'timeout');
  assert.equal(handshakeFailure(TIMEOUT_WRAPPED), 'timeout');
  assert.equal(handshakeFailure(ABORTED), 'timeout');
  assert.equal(handshakeFailure(RESET), 'gone');
  assert.equal(handshakeFailure(named('Error', 'write EPIPE', { code: 'EPIPE' })), 'gone');
  assert.equal(handshakeFailure(EOF), 'gone');
  assert.equal(handshakeFailure(named('UnexpectedEOFError', 'Unexpected EOF - tried to read 12 bytes but the stream closed')), 'gone');
  assert.equal(handshakeFailure(undefined), 'gone'); // closed cleanly: a dial that gave up, a port scan
  assert.equal(handshakeFailure(named('Error', 'something else entirely')), 'other');
});

function rig() {
  const lines: Array<{ level: string; o: Record<string, unknown>; msg: string }> = [];
  const log = { ...silentLogger(), warn: (o: Record<string, unknown>, msg: string) => void lines.push({ level: 'warn', o, msg }), info: (o: Record<string, unknown>, msg: string) => void lines.push({ level: 'info', o, msg }) } as unknown as Logger;
  const counts: string[] = [];
  const causes: Array<string | undefined> = [];
  const refusals = new RefusalLog({ log, count: (r, cause) => void (counts.push(r), causes.push(cause)), windowMs: 60_000 });
  const gater = overlayGater({ refusals, watchHandshakes: true });
  let port = 40_000;
  /** An inbound connection that closes before its handshake, with `error` on its close event (as libp2p's abort does). */
  const closeWith = async (error: unknown, ip = '127.0.0.1') => {
    const conn = Object.assign(new EventTarget(), { remoteAddr: { toString: () => `/ip4/${ip}/tcp/${port++}` } }) as unknown as MultiaddrConnection;
    assert.equal(await gater.denyInboundConnection!(conn), false);
    conn.dispatchEvent(Object.assign(new Event('close'), error === undefined ? {} : { error }));
  };
  return { lines, counts, causes, closeWith };
}

test('a handshake that timed out (a node resumed after SIGSTOP) is counted but not blamed on a swarm key', async () => {
  const r = rig();
  await r.closeWith(SILENT);
  await r.closeWith(undefined, '127.0.0.2');
  await r.closeWith(RESET, '127.0.0.3');
  assert.deepEqual(r.counts, ['handshake', 'handshake', 'handshake']);
  // counted with their cause (c0mpute_connections_refused_total{reason,cause}): the console tells them from a wrong key (QA qaCon F2)
  assert.deepEqual(r.causes, ['timeout', 'gone', 'gone']);
  assert.equal(r.lines.length, 3);
  for (const l of r.lines) {
    assert.doesNotMatch(l.msg, /swarm key\?/);
    assert.equal(l.level, 'info');
    assert.equal(l.o.reason, 'handshake');
  }
  assert.deepEqual(r.lines.map((l) => l.o.cause), ['timeout', 'gone', 'gone']);
  assert.match(r.lines[0]!.msg, /in time/);
  assert.equal(r.lines[2]!.o.error, 'read ECONNRESET');
});

test('a garbled handshake (a wrong key) still warns with the hint; its rate limit is its own, not eaten by a timeout', async () => {
  const r = rig();
  await r.closeWith(SILENT);
  await r.closeWith(WRONG_KEY);
  await r.closeWith(WRONG_KEY);
  assert.equal(r.counts.length, 3);
  const warns = r.lines.filter((l) => l.level === 'warn');
  assert.equal(warns.length, 1, 'one WARN per IP per minute for the garbled ones');
  assert.match(warns[0]!.msg, /wrong swarm key\?/);
  assert.equal(warns[0]!.o.cause, 'garbled');
  assert.equal(warns[0]!.o.error, 'Message length length too long - 8 > 2');
});
