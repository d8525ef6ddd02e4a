/**
 * `npm run bench -- console`: the operator's console (docs/console.md
 * "Size and speed"). One in-process daemon (buyer role, API on 127.0.0.1)
 * and Debian's chromium:
 *
 * - bundle size of dist/ui (bytes and gzipped);
 * - the API's own latency: GET /v1/status and /v1/console/overview (median);
 * - page load in the browser, fresh context each time: the console (login
 *   link → redirect → bundle → first API call → the overview drawn) against
 *   the baseline of the server-rendered login page (no script) from the same
 *   server in the same browser; target: console ≤ 6× the baseline;
 * - the market view drawn with 1,000 synthetic providers (the API answer
 *   replaced in the browser) against 10; target: ≤ 4× (the list is virtualised).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';
import { Daemon } from '../../src/node/daemon.js';
import { parseConfig } from '../../src/node/config.js';
import { createIdentity, loadIdentity } from '../../src/node/identity.js';
import { ensureToken } from '../../src/node/api.js';
import { consoleLoginUrl, UI_DIR } from '../../src/node/console-routes.js';
import { silentLogger } from '../../src/util/log.js';
import { median, table, type BenchResult } from './lib.js';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const REPS = 7;

function adverts(n: number): unknown[] {
  const now = Date.now();
  return Array.from({ length: n }, (_, i) => ({
    type: 'c0mpute.advert/1',
    address: `sha256:${i.toString(16).padStart(64, '0')}`,
    signer: `did:key:z6MkBench${String(i).padStart(5, '0')}`,
    live: true,
    reputation: 0.5,
    record: { seq: 1, issuedAt: now, expiresAt: now + 600_000, workloads: ['builtin.sha256'], tier: 'standard', region: 'eu-west', hardware: { cpuCores: 8, memoryMiB: 16384, gpus: [] }, prices: [{ workload: 'builtin.sha256', unit: 'job', price: { amount: '0.002', currency: 'USD' } }] },
  }));
}

/** Load `url` (then the console's `view`, e.g. `#/market`: a login link's redirect replaces any fragment with the session's key) until `ready` shows. */
async function pageMs(browser: Browser, url: string, ready: string, market?: unknown[], view?: string): Promise<number> {
  const ctx = await browser.createBrowserContext();
  const p = await ctx.newPage();
  if (market) {
    await p.setRequestInterception(true);
    // the daemon's paged answer (src/node/market-page.ts): the first page of `limit`, with how many match. The whole
    // list without `matched` (the answer before paging) left the grid's row count NaN and the bench waiting for good
    const page = (limit: number) => JSON.stringify({ total: market.length, live: market.length, presence: { live: 0, freeSlots: 0, providers: [] }, matched: market.length, offset: 0, workloads: [], adverts: market.slice(0, limit) });
    p.on('request', (r) => {
      const u = new URL(r.url());
      void (u.pathname === '/v1/market' ? r.respond({ status: 200, contentType: 'application/json', body: page(Number(u.searchParams.get('limit') ?? market.length)) }) : r.continue());
    });
  }
  const t0 = performance.now();
  await p.goto(url);
  if (view) await p.evaluate((h) => ((globalThis as unknown as { location: { hash: string } }).location.hash = h), view);
  await p.waitForSelector(ready, { timeout: 60_000 });
  const ms = performance.now() - t0;
  await ctx.close();
  return ms;
}

export async function run(): Promise<BenchResult> {
  const lines: string[] = [];
  const size = (f: string) => {
    const b = readFileSync(join(UI_DIR, f));
    return { file: `dist/ui/${f}`, bytes: b.length, gzip: gzipSync(b).length };
  };
  const sizes = [size('app.js'), size('style.css'), size('index.html')];
  lines.push(table(sizes.map((s) => ({ file: s.file, bytes: s.bytes, gzipped: s.gzip }))));
  lines.push(`total: ${sizes.reduce((n, s) => n + s.bytes, 0)} bytes, ${sizes.reduce((n, s) => n + s.gzip, 0)} gzipped`);

  const dir = mkdtempSync(join(tmpdir(), 'c0-bench-console-'));
  createIdentity(dir);
  const d = await Daemon.start({ dataDir: dir, config: parseConfig({ roles: ['buyer'], network: { listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true }, api: { listen: '127.0.0.1:0' } }), identity: loadIdentity(dir), log: silentLogger() });
  const api = d.apiAddress!;
  const token = ensureToken(dir);
  const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-background-timer-throttling', '--disable-backgrounding-occluded-windows', '--disable-renderer-backgrounding'] });
  try {
    const apiMs = async (path: string) => {
      const xs: number[] = [];
      for (let i = 0; i < 30; i++) {
        const t0 = performance.now();
        await (await fetch(`http://${api}${path}`, { headers: { authorization: `Bearer ${token}` } })).arrayBuffer();
        xs.push(performance.now() - t0);
      }
      return median(xs.slice(5));
    };
    const status = await apiMs('/v1/status');
    const overview = await apiMs('/v1/console/overview');
    const base: number[] = [];
    const consoleLoad: number[] = [];
    const m10: number[] = [];
    const m1000: number[] = [];
    const big = adverts(1000);
    const small = adverts(10);
    for (let i = 0; i < REPS; i++) {
      base.push(await pageMs(browser, `http://${api}/ui/login`, '#login'));
      consoleLoad.push(await pageMs(browser, await consoleLoginUrl(api, token), 'main dl.kv'));
      m10.push(await pageMs(browser, await consoleLoginUrl(api, token), '.grid[aria-rowcount="11"] .scroller [role=row]', small, '#/market'));
      m1000.push(await pageMs(browser, await consoleLoginUrl(api, token), '.grid[aria-rowcount="1001"] .scroller [role=row]', big, '#/market'));
    }
    const rows = [
      { measure: 'API GET /v1/status', ms: status.toFixed(1) },
      { measure: 'API GET /v1/console/overview', ms: overview.toFixed(1) },
      { measure: 'browser: login page (no script; baseline)', ms: median(base).toFixed(1) },
      { measure: 'browser: console overview drawn (login link → data)', ms: median(consoleLoad).toFixed(1) },
      { measure: 'browser: market drawn, 10 providers', ms: median(m10).toFixed(1) },
      { measure: 'browser: market drawn, 1,000 providers', ms: median(m1000).toFixed(1) },
    ];
    lines.push('', `medians of ${REPS} page loads (fresh browser context each), API medians of 25 calls:`, table(rows));
    const loadRatio = median(consoleLoad) / median(base);
    const marketRatio = median(m1000) / median(m10);
    return {
      report: lines.join('\n'),
      targets: [
        { name: 'console overview load / login page load', ratio: loadRatio, target: 6, met: loadRatio <= 6 },
        { name: 'market with 1,000 providers / with 10', ratio: marketRatio, target: 4, met: marketRatio <= 4 },
      ],
    };
  } finally {
    await browser.close();
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
