/**
 * GET /v1/console/jobs pages the buyer's jobs as GET /v1/jobs does (QA ffConsole F3): the Jobs view showed the newest
 * 50 and no more, a failed job of an hour ago on a busy buyer reachable only by typing its address. The answer gives
 * `buyerNext`, the cursor of the older page, and `before=` asks for that page; a cursor that is not one is refused
 * with its code, not read as the first page.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { consoleRoutes } from '../../../src/node/console-routes.js';
import type { ConsoleHub } from '../../../src/node/console-hub.js';
import type { ConsoleSessions } from '../../../src/node/console-session.js';
import type { Daemon } from '../../../src/node/daemon.js';
import type { JobsPageQuery } from '../../../src/node/job-history.js';

const CURSOR = `${'0'.repeat(15)}1!sha256:${'d'.repeat(64)}`;

function fakeDaemon(asked: JobsPageQuery[]): Daemon {
  const overlay = {
    name: 'public',
    clock: () => 10,
    // a buyer with more jobs than a page: the first page says where the next starts
    records: { jobsOf: async (_did: string, page: JobsPageQuery) => (asked.push(page), page.before === undefined ? { jobs: [], next: CURSOR } : { jobs: [] }) },
    market: { evidence: { receiptsAbout: () => [] } },
  };
  return { did: 'did:key:z6Mkself', overlay: () => overlay } as unknown as Daemon;
}

async function get(query: string, asked: JobsPageQuery[]): Promise<Record<string, unknown>> {
  const route = consoleRoutes(fakeDaemon(asked), {} as ConsoleSessions, { runs: [] } as unknown as ConsoleHub, async () => undefined).find((r) => r.path === '/v1/console/jobs')!;
  return (await route.handler({ params: {}, query: new URLSearchParams(query), body: undefined } as never, {} as never)) as Record<string, unknown>;
}

describe('GET /v1/console/jobs pages the buyer jobs', () => {
  it('gives the cursor of the older page, and before= reads it', async () => {
    const asked: JobsPageQuery[] = [];
    const first = await get('', asked);
    assert.equal(first.buyerMore, true);
    assert.equal(first.buyerNext, CURSOR);
    const older = await get(`before=${encodeURIComponent(CURSOR)}`, asked);
    assert.equal(older.buyerMore, false);
    assert.equal(older.buyerNext, undefined);
    assert.deepEqual(asked, [{ limit: 50 }, { limit: 50, before: CURSOR }]);
  });

  it('refuses a cursor that is not one with API_BAD_CURSOR (not the first page again)', async () => {
    await assert.rejects(get('before=sha256:abc', []), (e: Error & { code?: string }) => e.code === 'API_BAD_CURSOR');
  });
});
