/**
 * How the console reads the daemon's answers (ui/api.ts). QA (session 49): with the daemon down the views said
 * "ERROR: TypeError: Failed to fetch"; a market search refused with HTTP 431 (no JSON body) said "SyntaxError:
 * Unexpected end of JSON input".
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, CONNECTION_LOST, connectionLost, readAnswer } from '../../../ui/api.js';

const answer = (status: number, body: string | Error) => ({ status, ok: status >= 200 && status < 300, text: () => (body instanceof Error ? Promise.reject(body) : Promise.resolve(body)) });

describe('the console reads answers', () => {
  it('JSON, and the daemon own errors with their codes', async () => {
    assert.deepEqual(await readAnswer(answer(200, '{"a":1}')), { a: 1 });
    await assert.rejects(readAnswer(answer(404, '{"error":{"code":"JOB_NOT_FOUND","message":"no job"}}')), (e: ApiError) => e.code === 'JOB_NOT_FOUND' && e.message === 'no job' && e.status === 404);
  });
  it('an answer that is not JSON says the HTTP status, not a SyntaxError', async () => {
    await assert.rejects(readAnswer(answer(431, '')), (e: ApiError) => e instanceof ApiError && e.code === 'HTTP_431' && e.message === 'the node answered HTTP 431 Request Header Fields Too Large');
    await assert.rejects(readAnswer(answer(200, '<html>')), (e: ApiError) => e.code === 'HTTP_200' && /not with JSON/.test(e.message));
  });
  it('a body cut off, or no connection, is CONNECTION_LOST', async () => {
    await assert.rejects(readAnswer(answer(200, new TypeError('network error'))), (e: ApiError) => e.code === CONNECTION_LOST);
    assert.match(connectionLost().message, /^the connection to the node was lost \(is the daemon running\?\)/);
  });
});
