/**
 * A peer's error frame (src/net/frames.ts decodeFrame): its code is kept only in code form (upper case, digits, `_`,
 * at most 64), since the CLI, the /v1 answers and the logs show it as a code; anything else is NET_BAD_REMOTE_CODE
 * with the peer's text quoted first in the message (review s42 R4 F1: a made-up code with spaces and an escape, up to
 * 64 characters, went into the buyer's log and errors as the code).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeCanonical } from '../../../src/records/cbor.js';
import { NET_ERR, decodeFrame, encodeFrame } from '../../../src/net/frames.js';

test('an error frame with a code in code form keeps it', () => {
  assert.deepEqual(decodeFrame(encodeFrame({ t: 'error', code: 'EXEC_BUSY', message: 'all slots taken' })), { t: 'error', code: 'EXEC_BUSY', message: 'all slots taken' });
  const longest = 'A' + '_9'.repeat(31) + 'Z';
  assert.equal((decodeFrame(encodeFrame({ t: 'error', code: longest, message: 'm' })) as { code: string }).code, longest);
});

test('a code not in code form is NET_BAD_REMOTE_CODE, the peer’s text quoted in the message', () => {
  for (const code of ['EVIL_1 \u001b[31m', 'exec_busy', '', 'A'.repeat(65), 'OK status=completed', '1ABC']) {
    const f = decodeFrame(encodeCanonical([2, code, 'a message']));
    assert.equal(f.t, 'error');
    const e = f as { code: string; message: string };
    assert.equal(e.code, NET_ERR.BAD_REMOTE_CODE, JSON.stringify(code));
    assert.ok(e.message.startsWith(JSON.stringify(code.slice(0, 64))), e.message);
    assert.ok(e.message.endsWith(': a message'));
    assert.ok(e.message.length <= 500);
  }
});
