/**
 * The CLI's error when the daemon's API takes each connection and closes it at once (an API at its connection cap,
 * src/node/api.ts API_CONNECTIONS_FULL): it names that, not "stopped? overloaded?" (review s41 E F2). Before, fetch
 * reconnected until the wait ended and the CLI said the daemon did not answer, stopped or overloaded. A real server on
 * loopback that closes every connection it takes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { apiCall } from '../../../src/node/api-client.js';
import { C0Error } from '../../../src/errors.js';

async function closingServer(how: (s: Socket) => void): Promise<{ server: Server; base: string }> {
  const server = createServer(how);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const a = server.address() as { port: number };
  return { server, base: `127.0.0.1:${a.port}` };
}

for (const [name, how] of [
  ['closes', (s: Socket) => s.end()],
  ['resets', (s: Socket) => s.resetAndDestroy()],
] as const) {
  test(`an API that ${name} every connection at once: the error names it refusing connections and API_CONNECTIONS_FULL`, { timeout: 30_000 }, async () => {
    const { server, base } = await closingServer(how);
    try {
      const err = await apiCall(base, 'token', 'GET', '/v1/status', undefined, { timeoutMs: 2_000 }).then(
        () => assert.fail('answered'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof C0Error, String(err));
      assert.ok(err.code === 'DAEMON_NOT_ANSWERING' || err.code === 'DAEMON_UNREACHABLE', err.code);
      assert.match(err.message, /refusing connections/);
      assert.match(err.message, /API_CONNECTIONS_FULL/);
      assert.doesNotMatch(err.message, /overloaded/);
    } finally {
      server.close();
    }
  });
}

test('an API that takes the connection and says nothing (a stopped daemon) is still "stopped? overloaded?"', { timeout: 30_000 }, async () => {
  const held: Socket[] = [];
  const { server, base } = await closingServer((s) => void held.push(s));
  try {
    const err = (await apiCall(base, 'token', 'GET', '/v1/status', undefined, { timeoutMs: 1_000 }).catch((e: unknown) => e)) as C0Error;
    assert.equal(err.code, 'DAEMON_NOT_ANSWERING');
    assert.match(err.message, /stopped\? overloaded\?/);
  } finally {
    for (const s of held) s.destroy();
    server.close();
  }
});
