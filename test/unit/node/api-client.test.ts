/**
 * The CLI's side of the control API: an answer that is not the daemon's JSON (another server on its port) is
 * DAEMON_BAD_ANSWER, and a stream that breaks while the daemon answers (it stopped mid-run) is DAEMON_STREAM_LOST,
 * both operator errors (exit 3), never a bug (exit 70); a daemon that accepts and never answers (SIGSTOP, a stuck
 * event loop) is DAEMON_NOT_ANSWERING once the wait ends, not five minutes of silence and then DAEMON_UNREACHABLE.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import type { C0Error } from '../../../src/errors.js';
import { API_TIMEOUT_S, apiCall, apiStream, apiTimeoutMs, noteDaemonPid } from '../../../src/node/api-client.js';

async function serve(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; base: string }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, base: `127.0.0.1:${(server.address() as AddressInfo).port}` };
}

test('another server on the daemon’s port: DAEMON_BAD_ANSWER, for a call and for a stream', async () => {
  const { server, base } = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>Directory listing</title>');
  });
  try {
    await assert.rejects(apiCall(base, 't', 'GET', '/v1/status'), { code: 'DAEMON_BAD_ANSWER' });
    await assert.rejects(async () => {
      for await (const _ of apiStream(base, 't', '/v1/jobs', {})) void _;
    }, { code: 'DAEMON_BAD_ANSWER' });
  } finally {
    server.close();
  }
});

test('a daemon that stops while it streams: the events so far, then DAEMON_STREAM_LOST', async () => {
  const { server, base } = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write('{"e":"published"}\n');
    setTimeout(() => res.socket?.destroy(), 50);
  });
  try {
    const seen: unknown[] = [];
    await assert.rejects(async () => {
      for await (const ev of apiStream(base, 't', '/v1/jobs', {})) seen.push(ev);
    }, { code: 'DAEMON_STREAM_LOST' });
    assert.deepEqual(seen, [{ e: 'published' }]);
  } finally {
    server.close();
  }
});

test('a caller that stops reading early closes the answer: the daemon sees it leave', async () => {
  let left = false;
  const { server, base } = await serve((req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    const t = setInterval(() => res.write('{"e":"progress"}\n'), 20);
    res.on('close', () => {
      left = true;
      clearInterval(t);
    });
    void req;
  });
  try {
    for await (const ev of apiStream(base, 't', '/v1/jobs', {})) {
      assert.deepEqual(ev, { e: 'progress' });
      break;
    }
    const end = Date.now() + 5_000;
    while (!left && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    assert.ok(left, 'the server saw the client leave');
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

/** A listener that accepts and never answers: what a stopped (SIGSTOP) or wedged daemon looks like from the CLI. */
async function silent(): Promise<{ close: () => void; base: string }> {
  const sockets = new Set<Socket>();
  const server = createNetServer((s) => void sockets.add(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

test('a daemon that accepts and never answers: DAEMON_NOT_ANSWERING, naming its pid when daemon.json gave it', async () => {
  const { base, close } = await silent();
  try {
    await assert.rejects(apiCall(base, 't', 'GET', '/v1/status', undefined, { timeoutMs: 200 }), (e: C0Error) => {
      assert.equal(e.code, 'DAEMON_NOT_ANSWERING');
      assert.match(e.message, new RegExp(`API at ${base} did not answer in 0.2 s \\(stopped\\? overloaded\\?\\)`));
      return true;
    });
    noteDaemonPid(base, 4242);
    await assert.rejects(apiCall(base, 't', 'POST', '/v1/probe', {}, { timeoutMs: 200 }), (e: C0Error) => {
      assert.equal(e.code, 'DAEMON_NOT_ANSWERING');
      assert.match(e.message, /the daemon \(pid 4242\) is alive but its API at .* did not answer in 0\.2 s/);
      assert.deepEqual(e.detail, { api: base, pid: 4242, timeoutMs: 200 });
      return true;
    });
    await assert.rejects(async () => {
      for await (const _ of apiStream(base, 't', '/v1/run', {}, { timeoutMs: 200 })) void _;
    }, { code: 'DAEMON_NOT_ANSWERING' });
  } finally {
    close();
  }
});

test('a stream is timed to its headers only: events that come later than the wait still arrive', async () => {
  const { server, base } = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.flushHeaders();
    // the first event comes well after the wait would have ended (a job's first word can take long)
    setTimeout(() => res.end('{"e":"result"}\n'), 1_500);
  });
  try {
    const seen: unknown[] = [];
    for await (const ev of apiStream(base, 't', '/v1/run', {}, { timeoutMs: 1_000 })) seen.push(ev);
    assert.deepEqual(seen, [{ e: 'result' }]);
  } finally {
    server.close();
  }
});

test('the work a call names is added to the wait; C0MPUTE_API_TIMEOUT sets the wait, a bad value is CONFIG_INVALID', async () => {
  const { server, base } = await serve((_req, res) => {
    setTimeout(() => res.end('{"ok":true}'), 400);
  });
  try {
    assert.deepEqual(await apiCall(base, 't', 'GET', '/v1/ledger/x', undefined, { timeoutMs: 50, workMs: 60_000 }), { ok: true });
  } finally {
    server.close();
  }
  assert.equal(apiTimeoutMs(undefined), API_TIMEOUT_S * 1000);
  assert.equal(apiTimeoutMs(''), API_TIMEOUT_S * 1000);
  assert.equal(apiTimeoutMs('2.5'), 2500);
  assert.equal(apiTimeoutMs('0.1'), 100);
  for (const bad of ['0', '-1', 'ten', '1e3', '100000', '0.000001', '0.05']) assert.throws(() => apiTimeoutMs(bad), { code: 'CONFIG_INVALID', field: 'C0MPUTE_API_TIMEOUT' }, bad);
});

test('a stream that sends nothing, not even its heartbeat, is given up DAEMON_NOT_ANSWERING; one that beats is not', async () => {
  // a stopped daemon mid-stream (SIGSTOP): before, `c0mpute run` waited for ever (review s40)
  const sockets: Socket[] = [];
  const { server, base } = await serve((req, res) => {
    sockets.push(res.socket as Socket);
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write('{"e":"published"}\n');
    if (req.url === '/v1/quiet') return; // and nothing more
    // a long job: empty lines (the heartbeat) more often than the idle limit, then the result
    const beat = setInterval(() => res.write('\n'), 40);
    setTimeout(() => {
      clearInterval(beat);
      res.end('{"e":"result","result":{"ok":true}}\n');
    }, 600);
  });
  try {
    const got: unknown[] = [];
    await assert.rejects(
      async () => {
        for await (const ev of apiStream(base, 't', '/v1/quiet', {}, { streamIdleMs: 200 })) got.push(ev.e);
      },
      (e: C0Error) => e.code === 'DAEMON_NOT_ANSWERING' && /sent nothing for/.test(e.message) && /c0mpute jobs/.test(e.message),
    );
    assert.deepEqual(got, ['published'], 'the events before the silence came through');
    const beat: unknown[] = [];
    for await (const ev of apiStream(base, 't', '/v1/beats', {}, { streamIdleMs: 200 })) beat.push(ev.e);
    assert.deepEqual(beat, ['published', 'result'], 'heartbeats keep a long stream alive past the idle limit');
  } finally {
    for (const s of sockets) s.destroy();
    server.close();
  }
});
