/**
 * PeerLog (src/util/peer-log.ts): warnings a peer can trigger at will (a refused exec/1 stream) are written once per
 * (peer, code), then at most one summary line a window with how many more came, so one peer cannot fill the log.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { MANY_PEERS, PeerLog } from '../../../src/util/peer-log.js';

function rig(o: { windowMs?: number; maxKeys?: number; maxPeersPerCode?: number } = {}) {
  let now = 1_000_000;
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  const pl = new PeerLog({ log, clock: () => now, ...o });
  return { pl, lines, advance: (ms: number) => void (now += ms) };
}

describe('PeerLog', () => {
  it('the first of a (peer, code) is written in full; the rest of the window only as one summary with the count', () => {
    const { pl, lines, advance } = rig({ windowMs: 60_000 });
    for (let i = 0; i < 500; i++) pl.warn('peerA', 'EXEC_BAD_REQUEST', 'exec request refused', { err: `frame ${i}` });
    assert.equal(lines.length, 1);
    assert.deepEqual({ level: lines[0]!.level, msg: lines[0]!.msg, peer: lines[0]!.peer, code: lines[0]!.code, err: lines[0]!.err }, { level: 40, msg: 'exec request refused', peer: 'peerA', code: 'EXEC_BAD_REQUEST', err: 'frame 0' });
    advance(59_999);
    pl.flush();
    assert.equal(lines.length, 1, 'nothing before the window ends');
    advance(1);
    pl.flush();
    assert.equal(lines.length, 2);
    assert.deepEqual({ msg: lines[1]!.msg, peer: lines[1]!.peer, code: lines[1]!.code, more: lines[1]!.more, level: lines[1]!.level }, { msg: 'exec request refused (repeated)', peer: 'peerA', code: 'EXEC_BAD_REQUEST', more: 499, level: 40 });
    pl.flush();
    assert.equal(lines.length, 2, 'one summary a window');
  });

  it('a steady flood writes one line a minute; a quiet window ends it, and the next is written in full again', () => {
    const { pl, lines, advance } = rig({ windowMs: 60_000 });
    // 10 a second for 5 minutes, with no flush in between (a summary is also written when the next one comes)
    for (let t = 0; t < 300_000; t += 100) {
      pl.warn('peerA', 'ENVELOPE_MALFORMED', 'exec request refused');
      advance(100);
    }
    assert.equal(lines.length, 5, 'at 0, 1, 2, 3 and 4 minutes, for 3,000 refusals');
    advance(60_000);
    pl.flush();
    const before = lines.length;
    assert.equal(before, 6, 'the last minute’s, once its window ended');
    advance(60_000);
    pl.flush();
    assert.equal(lines.length, before, 'a quiet window: nothing more to say');
    pl.warn('peerA', 'ENVELOPE_MALFORMED', 'exec request refused');
    assert.equal(lines.length, before + 1);
    assert.equal(lines.at(-1)!.msg, 'exec request refused', 'written in full');
    const total = lines.reduce((n, l) => n + (l.msg === 'exec request refused' ? 1 : (l.more as number)), 0);
    assert.equal(total, 3_001, 'every refusal is in a line or a count');
  });

  it('each peer and code has its own line; the keys held are bounded, a dropped one says what it held', () => {
    const { pl, lines } = rig({ windowMs: 60_000, maxKeys: 3 });
    pl.warn('peerA', 'X', 'refused');
    pl.warn('peerA', 'Y', 'refused');
    pl.warn('peerB', 'X', 'refused');
    pl.warn('peerA', 'X', 'refused');
    assert.equal(lines.length, 3);
    pl.warn('peerC', 'X', 'refused'); // peerA/X goes, with its one suppressed
    assert.equal(lines.length, 5);
    assert.deepEqual([lines[3]!.peer, lines[3]!.more, lines[4]!.peer], ['peerA', 1, 'peerC']);
  });

  it('stop writes what is pending', () => {
    const { pl, lines } = rig();
    pl.warn('peerA', 'X', 'refused');
    pl.warn('peerA', 'X', 'refused');
    pl.stop();
    assert.deepEqual(lines.map((l) => l.more), [undefined, 1]);
  });

  it('past maxPeersPerCode peers with one code, new peers share one line (throwaway keys: review s42 R7 F2)', () => {
    const { pl, lines, advance } = rig({ windowMs: 60_000, maxPeersPerCode: 16 });
    // before: 40 fresh keys, 40 lines in full
    for (let i = 0; i < 40; i++) pl.warn(`key${i}`, 'EXEC_NOT_SELECTED', 'exec request refused');
    pl.warn('key3', 'EXEC_NOT_SELECTED', 'exec request refused'); // one held already: its own key
    pl.warn('key20', 'OTHER', 'refused'); // another code: its own budget
    assert.deepEqual(lines.map((l) => l.peer), [...Array.from({ length: 16 }, (_, i) => `key${i}`), MANY_PEERS, 'key20']);
    advance(60_000);
    pl.flush();
    const summaries = lines.slice(18).map((l) => [l.peer, l.more]);
    assert.deepEqual(summaries, [['key3', 1], [MANY_PEERS, 23]]);
  });
});
