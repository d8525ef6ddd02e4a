/**
 * ApiResponse.clientGone (src/node/api.ts), which POST /v1/run asks before it publishes a job (control.ts): a client
 * that left before the daemon got to its request is seen as gone, so its job is not run. Before, a `c0mpute run` that
 * gave up on a stalled daemon (DAEMON_NOT_ANSWERING, exit 3) had its job published, run and paid for once the daemon
 * resumed, and following the printed advice (run again with a longer wait) bought it twice (review s40 F F2). Real
 * HTTP server and sockets: the client sends its whole request and closes at once, as the CLI's aborted fetch does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Registry } from 'prom-client';
import { splitHostPort, startApi, type Route } from '../../../src/node/api.js';
import { silentLogger } from '../../../src/util/log.js';

const TOKEN = 'test-token-0123456789';

test('a client that closed right after its request is gone; one still waiting is not', async () => {
  const seen: boolean[] = [];
  let heard: () => void = () => {};
  const routes: Route[] = [
    {
      method: 'POST',
      path: '/v1/try',
      handler: async (_req, res) => {
        seen.push(await res.clientGone());
        heard();
        return { ok: true };
      },
    },
  ];
  const s = await startApi({ listen: '127.0.0.1:0', token: TOKEN, routes, registry: new Registry(), log: silentLogger() });
  const { host, port } = splitHostPort(s.address);
  const body = '{}';
  const request = `POST /v1/try HTTP/1.1\r\nHost: ${s.address}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  try {
    // the request and the close together
    const once = new Promise<void>((r) => (heard = r));
    const left = connect({ host, port }, () => left.end(request));
    left.on('error', () => {});
    await once;
    assert.deepEqual(seen, [true]);

    // a client that waits for its answer
    const twice = new Promise<void>((r) => (heard = r));
    const r = await fetch(`http://${s.address}/v1/try`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body });
    assert.equal(r.status, 200);
    await r.text();
    await twice;
    assert.deepEqual(seen, [true, false]);
  } finally {
    await s.close();
  }
});
