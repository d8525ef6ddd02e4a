/**
 * The operator's console in a real browser (issue #15; docs/console.md):
 * Debian's chromium driven by puppeteer-core against real `c0mpute start`
 * processes (the organisation scenario: a steward, a witness, two providers
 * and a buyer on a private overlay). One cluster serves every check, in order:
 *
 * - without a login link the console is the login page (401); the buyer's
 *   one-time URL logs in (and works only once);
 * - the session cookie, which the browser also sends to any other server on
 *   127.0.0.1, replayed from there without the key the tab holds, opens
 *   nothing; another tab of the browser without the key gets the login page;
 * - the market view lists the overlay's providers;
 * - a job run from the form streams its progress, then its timeline links
 *   resolve to the decoded job, receipt and acceptance records;
 * - the steward's overlay page shows team-a's spent energy change after the
 *   job releases, live (no reload), and the witnesses' coverage;
 * - a made-up or ended session gets the login page;
 * - a synthetic 1,000-provider market (the API's pages replaced in the browser)
 *   is asked for a page at a time, renders only the rows in view, and pages
 *   on to the last provider;
 * - axe-core finds no serious or critical violation in any view, at laptop
 *   and phone widths, and nothing is wider than a phone's window.
 *
 * Screenshots of every view go to test-artifacts/console/ (gitignored);
 * `node scripts/console-shots.mjs` copies them into docs/console/.
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { consoleLoginUrl } from '../../src/node/console-routes.js';
import { marketPage, parseMarketPage } from '../../src/node/market-page.js';
import type { C0Error } from '../../src/errors.js';
import type { Advert, Opened } from '../../src/records/index.js';
import { c0mpute, waitFor } from './node-helpers.js';
import { startOrg, stewardStatus, type Org } from './steward-helpers.js';

// The page's globals, as the functions puppeteer runs in the browser see them (the tests compile without the DOM library).
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const window: any;
declare const document: any;
type Document = any;
type HTMLElement = any;
type HTMLInputElement = any;
type HTMLButtonElement = any;
/* eslint-enable @typescript-eslint/no-explicit-any */

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = join(process.cwd(), 'test-artifacts', 'console');
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
// Skipped on a developer's machine without chromium; never in CI (`.ci/run` installs it), where a missing browser must fail.
const skip = existsSync(CHROMIUM) || process.env.CI ? false : `no chromium at ${CHROMIUM} (apt-get install chromium)`;

let org: Org;
let browser: Browser;
let buyer: Page;
let stewardPage: Page;
let jobAddress = '';

async function newPage(width = 1280, height = 900): Promise<Page> {
  const p = await browser.newPage();
  // axe-core is injected as a script: let it past the console's Content-Security-Policy.
  await p.setBypassCSP(true);
  await p.setViewport({ width, height });
  p.on('pageerror', (e) => console.error('page error:', (e as Error).message));
  return p;
}

async function shot(p: Page, name: string): Promise<void> {
  await p.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** axe-core on the page as it is: no serious or critical violation. */
async function accessible(p: Page, view: string): Promise<void> {
  await p.addScriptTag({ path: AXE });
  const v = await p.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(d: Document, o: object): Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }> }> } }).axe;
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((x) => ({ id: x.id, impact: x.impact, nodes: x.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
  const bad = v.filter((x) => x.impact === 'serious' || x.impact === 'critical');
  assert.deepEqual(bad, [], `${view}: accessibility violations ${JSON.stringify(bad)}`);
}

/** Wait for a view whose heading starts with `heading`; if it does not come, the error says what the page showed instead. */
async function shows(p: Page, heading: string): Promise<void> {
  try {
    await p.waitForFunction((t) => document.querySelector('main h1')?.textContent?.startsWith(t), { timeout: 30_000 }, heading);
  } catch (e) {
    throw new Error(`${heading} did not show at ${p.url()}: ${(e as Error).message}\n${await p.evaluate(() => document.body?.innerText?.slice(0, 600)).catch(() => '')}`, { cause: e });
  }
}

async function go(p: Page, hash: string, heading: string): Promise<void> {
  await p.evaluate((h) => (window.location.hash = h), hash);
  await shows(p, heading);
}

async function login(p: Page, n: { api: { api: string; token: string } }): Promise<void> {
  await p.goto(await consoleLoginUrl(n.api.api, n.api.token));
  await shows(p, 'Overview');
}

const text = (p: Page, sel = 'main') => p.$eval(sel, (e) => (e as HTMLElement).innerText);


/**
 * Press "Run the job" once it can be pressed: the button is disabled until the node's overlays have loaded, and a
 * click on it before then does nothing (under a loaded CI the test clicked a disabled button and waited 30 s for a
 * run that never began).
 */
async function submitRun(p: Page): Promise<void> {
  await p.waitForSelector('#run-submit:not([disabled])', { timeout: 30_000 });
  await p.click('#run-submit');
}
before(async () => {
  if (skip) return;
  mkdirSync(SHOTS, { recursive: true });
  org = await startOrg('console', { providers: 2, buyers: ['alpha'] });
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-background-timer-throttling', '--disable-backgrounding-occluded-windows', '--disable-renderer-backgrounding'] });
});

after(async () => {
  await browser?.close();
  await org?.c.destroy();
});

test('without a login link: the login page, not the console', { skip }, async () => {
  const p = await newPage();
  const r = await p.goto(`http://${org.buyers.alpha!.api.api}/ui/`);
  assert.equal(r?.status(), 401);
  assert.ok(await p.$('#login'));
  await shot(p, 'login');
  await accessible(p, 'login');
  await p.close();
});

test('the URL `c0mpute console` prints logs in once; the overview shows the node', { skip }, async () => {
  const alpha = org.buyers.alpha!;
  // The URL as the operator gets it: `c0mpute console` on the node's data directory.
  const cli = await c0mpute(alpha.dir, ['console']);
  assert.equal(cli.code, 0, cli.err);
  const url = cli.out.trim();
  assert.match(url, /^http:\/\/127\.0\.0\.1:[0-9]+\/ui\/login\?code=[A-Za-z0-9_-]{43}$/);
  buyer = await newPage();
  await buyer.goto(url);
  await shows(buyer, 'Overview');
  assert.match(await text(buyer), new RegExp(alpha.did));
  await buyer.waitForFunction(() => document.querySelector('.feed')?.textContent?.includes('live'), { timeout: 30_000 });
  // Keyboard: the first Tab reaches the skip link.
  await buyer.keyboard.press('Tab');
  assert.equal(await buyer.evaluate(() => document.activeElement?.textContent), 'Skip to content');
  // …and it moves focus to the main element, not through the router (QA s49: `#main` went to the Overview)
  await go(buyer, '#/market', 'Market');
  await buyer.focus('a.skip');
  await buyer.keyboard.press('Enter');
  assert.deepEqual(await buyer.evaluate(() => [window.location.hash, document.activeElement?.id, document.querySelector('main h1')?.textContent]), ['#/market', 'main', 'Market']);
  // a route no view has is a page saying so, with no view highlighted
  await go(buyer, '#/nonsense', 'No such page');
  assert.equal(await buyer.$('nav [aria-current]'), null);
  await go(buyer, '#/overview', 'Overview');
  // the network's health says what it is, as `c0mpute status` does (it read a `reason` the API never had: nothing)
  await buyer.waitForFunction(() => /Network\W*ok\s*\d+ peers?, \d+ live adverts?/.test(document.querySelector('main')?.textContent ?? ''), { timeout: 30_000 });
  await shot(buyer, 'overview');
  await accessible(buyer, 'overview');
  // The same link again: refused.
  const again = await newPage();
  const r = await again.goto(url);
  assert.equal(r?.status(), 401);
  await again.close();
});

test('the session cookie replayed by another server on 127.0.0.1 opens nothing without the key the tab holds', { skip }, async () => {
  const base = `http://${org.buyers.alpha!.api.api}`;
  assert.doesNotMatch(buyer.url(), /k=/, 'the key left the address bar');
  const key = await buyer.evaluate(() => window.sessionStorage.getItem('c0mpute.console.key'));
  assert.match(String(key), /^[A-Za-z0-9_-]{43}$/);
  // Another server on this host (another local user's, a dev tool's), on its own port: the browser sends it the
  // console's cookie (cookies are per host, not per port), never the key (sessionStorage is per origin, port included).
  let got: string | undefined;
  const spy = createServer((req, res) => {
    got ??= req.headers.cookie;
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<p>hello</p>');
  });
  await new Promise<void>((ok) => spy.listen(0, '127.0.0.1', ok));
  try {
    const visit = await newPage();
    await visit.goto(`http://127.0.0.1:${(spy.address() as AddressInfo).port}/`);
    await visit.close();
  } finally {
    spy.close();
  }
  const port = org.buyers.alpha!.api.api.split(':')[1];
  const cookie = got?.split(/;\s*/).find((c) => c.startsWith(`c0_console_${port}=`));
  assert.ok(cookie, `the other server got the session cookie: ${got}`);
  // Replayed, alone or with the old fixed header: refused, reads, writes and the stream alike.
  const refused = async (path: string, init: RequestInit) => {
    const r = await fetch(`${base}${path}`, init);
    assert.equal(r.status, 401, path);
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'CONSOLE_KEY_REFUSED', path);
  };
  await refused('/v1/status', { headers: { cookie } });
  await refused('/v1/console/events', { headers: { cookie, 'x-c0mpute-console': '1' } });
  await refused('/v1/console/run', { method: 'POST', headers: { cookie, 'x-c0mpute-console': '1', 'content-type': 'application/json' }, body: JSON.stringify({ yaml: 'workload: builtin.sha256\nparams: "1"\ninput: "x"\nmaxPrice: "5 USD"\ndeadline: 5s\n' }) });
  // the cookie is live: with the tab's key it is the session
  assert.equal((await fetch(`${base}/v1/status`, { headers: { cookie, 'x-c0mpute-console': String(key) } })).status, 200);
  // Another tab of the same browser has the cookie but not the key: the login page, saying so.
  const tab = await newPage();
  await tab.goto(`${base}/ui/`);
  await tab.waitForSelector('#login', { timeout: 30_000 });
  assert.match(await text(tab, '#login'), /does not hold the key/);
  await tab.close();
  // and the operator's tab is still live
  await buyer.bringToFront();
  await go(buyer, '#/overview', 'Overview');
  await buyer.waitForFunction(() => document.querySelector('.feed')?.textContent?.includes('live'), { timeout: 30_000 });
});

test('the market lists the providers', { skip }, async () => {
  await go(buyer, '#/market', 'Market');
  for (const prov of org.providers) await buyer.waitForSelector(`.grid [role=row] [title="${prov.did}"]`, { timeout: 30_000 });
  await shot(buyer, 'market');
  await accessible(buyer, 'market');
});

test('a job run from the form shows progress, then a timeline whose links resolve to the records', { skip }, async () => {
  stewardPage = await newPage();
  await login(stewardPage, org.steward);
  await go(stewardPage, '#/overlays', 'Overlays');
  await stewardPage.waitForSelector('tr[data-team="team-a"] td.spent-uj', { timeout: 30_000 });
  const spentBefore = Number(await stewardPage.$eval('tr[data-team="team-a"] td.spent-uj', (e) => (e as HTMLElement).dataset.uj));
  assert.equal(spentBefore, (await stewardStatus(org.steward)).teams.find((t) => t.id === 'team-a')!.spent_uj);

  await buyer.bringToFront();
  await go(buyer, '#/run', 'Run a job');
  const set = async (name: string, value: string) => {
    // cleared through an input event, so the form's state is cleared too: a bare DOM write was undone by any
    // re-render before the first keystroke (the overlays list arriving), and the typing then appended to the default
    await buyer.$eval(`[name="${name}"]`, (e) => {
      (e as HTMLInputElement).value = '';
      e.dispatchEvent(new Event('input', { bubbles: true }));
    });
    await buyer.type(`[name="${name}"]`, value);
  };
  await set('params', '200000');
  await set('entitlement', 'team-a');
  await set('cls', 'sha256-batch');
  await set('energyJ', '100');
  await set('input', `console job ${Date.now()}`);
  await submitRun(buyer);
  // Progress first (the narration streams while the job runs), then the result.
  await buyer.waitForFunction(() => document.querySelectorAll('ol.narration li').length >= 2, { timeout: 60_000 });
  await buyer.waitForSelector('#run-result', { timeout: 90_000 });
  const result = await text(buyer, '#run-result');
  assert.match(result, /completed/, `the run ended: ${result}\n${await text(buyer)}`);
  const narration = await text(buyer, 'ol.narration');
  assert.match(narration, /announced/);
  assert.match(narration, /selected/);
  assert.match(narration, /countersigned: accepted/);
  await shot(buyer, 'run');
  await accessible(buyer, 'run');

  // The timeline.
  await buyer.click('#run-result a');
  await shows(buyer, 'Job');
  jobAddress = decodeURIComponent((await buyer.evaluate(() => window.location.hash)).split('/')[2]!);
  await buyer.waitForFunction(() => [...document.querySelectorAll('ol.timeline > li')].at(-1)?.querySelector('a.addr') !== null, { timeout: 30_000 });
  await shot(buyer, 'job');
  await accessible(buyer, 'job timeline');
  const links = await buyer.$$eval('ol.timeline > li', (lis) => lis.map((li) => [...li.querySelectorAll('a.addr')].map((a) => a.getAttribute('title') ?? '')));
  const [jobLinks, , , selLinks, , receiptLinks, accLinks] = links;
  assert.equal(jobLinks![0], jobAddress);
  for (const [addr, type] of [
    [jobAddress, 'c0mpute.job/1'],
    [selLinks![0]!, 'c0mpute.selection/1'],
    [receiptLinks![0]!, 'c0mpute.receipt/1'],
    [accLinks![0]!, 'c0mpute.acceptance/1'],
  ] as const) {
    await buyer.evaluate((a) => (window.location.hash = `#/jobs/${encodeURIComponent(a)}`), jobAddress);
    await buyer.waitForSelector(`ol.timeline a.addr[title="${addr}"]`, { timeout: 30_000 });
    await buyer.click(`ol.timeline a.addr[title="${addr}"]`);
    await buyer.waitForFunction((t) => document.querySelector('#record-type')?.textContent === t, { timeout: 30_000 }, type);
    assert.equal(await text(buyer, '#record-address'), addr);
    if (type === 'c0mpute.receipt/1') {
      // A record's fields link to the records it cites: the receipt's job.
      assert.ok(await buyer.$(`article.record a.addr[title="${jobAddress}"]`), 'the receipt links to its job');
      await shot(buyer, 'record');
      await accessible(buyer, 'record');
    }
  }

  // The steward's page, open all along: team-a's spent energy changes once the job releases (live, no reload).
  await stewardPage.bringToFront();
  const spentAfter = await waitFor('the steward page to show the release', async () => {
    const v = Number(await stewardPage.$eval('tr[data-team="team-a"] td.spent-uj', (e) => (e as HTMLElement).dataset.uj));
    return v > spentBefore ? v : undefined;
  }, 60_000, 500);
  const teams = (await stewardStatus(org.steward)).teams;
  assert.equal(spentAfter, teams.find((t) => t.id === 'team-a')!.spent_uj);
  // the root's own row counts its own claims; the row after it sums every team below it
  const belowRoot = await waitFor('the root’s all-below row to show the release', async () => {
    const v = Number(await stewardPage.$eval('tr[data-below="acme"] td.spent-uj', (e) => (e as HTMLElement).dataset.uj));
    return v >= spentAfter ? v : undefined;
  }, 30_000, 500);
  assert.equal(belowRoot, teams.filter((t) => t.parent === 'acme').reduce((n, t) => n + t.spent_uj, 0));
  await stewardPage.waitForFunction(() => /witnessed to length [1-9][0-9]* of [1-9]/.test(document.querySelector('#witness-coverage')?.textContent ?? ''), { timeout: 60_000 });
  await shot(stewardPage, 'overlays-steward');
  await accessible(stewardPage, 'overlays (steward)');
});

test('jobs and reputation views list the job and the provider', { skip }, async () => {
  await buyer.bringToFront();
  await go(buyer, '#/jobs', 'Jobs');
  await buyer.waitForSelector(`a[title="${jobAddress}"]`, { timeout: 30_000 });
  await shot(buyer, 'jobs');
  await accessible(buyer, 'jobs');
  await go(buyer, '#/reputation', 'Reputation');
  await buyer.waitForFunction(() => document.querySelectorAll('main tbody tr').length >= 1, { timeout: 30_000 });
  // a page of the providers, those with first-hand evidence first, with the counts of the whole (review s43 R3 F3)
  assert.match(await text(buyer, '#reputation-summary'), /^[1-9]\d* providers? with evidence held; [1-9]\d* with evidence that counts, [1-9]\d* of them first-hand/);
  await shot(buyer, 'reputation');
  await accessible(buyer, 'reputation');
});

test('a bad job file pasted as YAML gets the same coded error as `c0mpute run`', { skip }, async () => {
  await go(buyer, '#/run', 'Run a job');
  await buyer.evaluate(() => [...document.querySelectorAll('fieldset.mode input')][1].click());
  await buyer.waitForSelector('textarea[name=yaml]');
  // cleared as a user clears it (the input event updates the page's state): a value set alone was put back by the
  // next render of the controlled textarea, and the typed job followed the template's keys (JOB_FILE_NOT_YAML,
  // "Map keys must be unique", under load)
  await buyer.$eval('textarea[name=yaml]', (e: HTMLInputElement) => {
    e.value = '';
    e.dispatchEvent(new Event('input', { bubbles: true }));
  });
  await buyer.type('textarea[name=yaml]', 'workload: builtin.sha256\nmaxPrice: 0.01 USD\ndeadline: soon\ninput: x\n');
  await submitRun(buyer);
  await buyer.waitForSelector('main .error[role=alert]', { timeout: 30_000 });
  assert.match(await text(buyer, 'main .error[role=alert]'), /^JOB_FILE_INVALID/);
  assert.equal(await buyer.$('ol.narration'), null, 'nothing ran');
});

test('phone width: every view fits the window and stays accessible', { skip }, async () => {
  await buyer.setViewport({ width: 390, height: 844 });
  for (const [hash, h] of [['#/overview', 'Overview'], ['#/market', 'Market'], ['#/run', 'Run a job'], ['#/jobs', 'Jobs'], ['#/reputation', 'Reputation']] as const) {
    await go(buyer, hash, h);
    await buyer.waitForFunction(() => !document.querySelector('main .loading'), { timeout: 30_000 });
    const wide = await buyer.evaluate(() => document.documentElement.scrollWidth);
    const over = await buyer.evaluate(() => [...document.querySelectorAll('main *')].filter((e: HTMLElement) => e.getBoundingClientRect().right > 391 && !e.closest('.grid-wrap')).slice(0, 4).map((e) => `${e.tagName}.${e.className}`));
    assert.ok(wide <= 390, `${h} is ${wide}px wide on a 390px window: ${over.join(', ')}`);
    await accessible(buyer, `${h} (phone)`);
    if (h === 'Overview' || h === 'Market') await shot(buyer, `${h.toLowerCase()}-phone`);
  }
  await buyer.setViewport({ width: 1280, height: 900 });
});

test('a made-up or ended session gets the login page', { skip }, async () => {
  const base = `http://${org.buyers.alpha!.api.api}`;
  const port = org.buyers.alpha!.api.api.split(':')[1];
  // A browser of its own (cookies are shared by the pages of one browser context).
  const ctx = await browser.createBrowserContext();
  const p = await ctx.newPage();
  await p.setCookie({ name: `c0_console_${port}`, value: 'A'.repeat(43), url: base });
  const r = await p.goto(`${base}/ui/`);
  assert.equal(r?.status(), 401);
  assert.ok(await p.$('#login'));
  await ctx.close();
  // Logging out ends the session: the open page goes to the login page when it next asks.
  await Promise.all([buyer.waitForNavigation(), buyer.click('form.logout button')]);
  await buyer.waitForSelector('#login', { timeout: 30_000 });
  const back = await buyer.goto(`${base}/ui/#/market`);
  assert.equal(back?.status(), 401);
});

test('a 1,000-provider market is read a page at a time, renders only the rows in view and pages to the last', { skip }, async () => {
  const alpha = org.buyers.alpha!;
  const p = await newPage();
  await p.goto(await consoleLoginUrl(alpha.api.api, alpha.api.token));
  await p.waitForSelector('main h1');
  await p.setRequestInterception(true);
  const now = Date.now();
  const adverts = Array.from({ length: 1000 }, (_, i) => {
    const did = `did:key:z6MkSynthetic${String(i).padStart(4, '0')}`;
    // the first is a pool member's advert: the market knows it under the pool's DID, with the pool's reputation
    const pooled = i === 0 ? { provider: `${did}pool`, pool: { did: `${did}pool`, members: 3 } } : {};
    return { type: 'c0mpute.advert/1', address: `sha256:${i.toString(16).padStart(64, '0')}`, signer: did, ...pooled, live: true, reputation: 0.5, freeSlots: i % 4, record: { seq: 1, issuedAt: now, expiresAt: now + 600_000, workloads: ['builtin.sha256'], tier: ['community', 'standard', 'verified'][i % 3], ...(i % 5 ? { region: 'eu-west' } : {}), hardware: { cpuCores: 4 + (i % 29), memoryMiB: 8192 * (1 + (i % 8)), gpus: [] }, prices: [{ workload: 'builtin.sha256', unit: 'job', price: { amount: (0.001 + i / 1e6).toFixed(6), currency: 'USD' } }] } };
  });
  // the daemon's pages over the synthetic book, by the daemon's own code (src/node/market-page.ts): the parameters the
  // view sends are the ones the daemon reads (a malformed one is its 400), and Next follows the daemon's cursor
  const asked: URLSearchParams[] = [];
  const book = adverts.map((a) => ({ provider: a.provider ?? a.signer, a: a as unknown as Opened<Advert> }));
  p.on('request', (req) => {
    const u = new URL(req.url());
    if (u.pathname !== '/v1/market') return void req.continue();
    const q = u.searchParams;
    asked.push(q);
    let body: Record<string, unknown>;
    let status = 200;
    try {
      const r = marketPage(book, parseMarketPage(q)!, { now: Date.now(), scoreOf: () => 0.5, freeSlots: new Map() });
      body = { total: 1000, live: 1000, presence: { live: 0, freeSlots: 0 }, matched: r.matched, offset: r.offset, ...(r.next !== undefined ? { next: r.next } : {}), workloads: r.workloads, ...(r.currency !== undefined ? { currency: r.currency } : {}), adverts: r.page.map((e) => e.a) };
    } catch (e) {
      status = 400;
      body = { error: { code: (e as C0Error).code ?? 'ERROR', message: String((e as Error).message) } };
    }
    void req.respond({ status, contentType: 'application/json', body: JSON.stringify(body) });
  });
  await go(p, '#/market', 'Market');
  await p.waitForFunction(() => document.querySelector('.grid')?.getAttribute('aria-rowcount') === '1001', { timeout: 30_000 });
  // every request was for one page, never the whole book
  assert.ok(asked.length > 0 && asked.every((q) => q.get('limit') !== null && Number(q.get('limit')) <= 100), asked.map(String).join(' | '));
  // a pool's row names the pool, not the member whose advert it is
  await p.waitForSelector('.scroller [title="did:key:z6MkSynthetic0000pool"]', { timeout: 30_000 });
  const poolRow = await p.$eval('.scroller [title="did:key:z6MkSynthetic0000pool"]', (e) => e.closest('[role=row]')?.textContent ?? '');
  assert.match(poolRow, /pool of 3/);
  const rendered = await p.$$eval('.scroller [role=row]', (r) => r.length);
  assert.ok(rendered > 5 && rendered < 60, `${rendered} rows in the page for 1,000 providers`);
  await p.$eval('.scroller', (s) => (s.scrollTop = s.scrollHeight));
  await p.waitForSelector('.scroller [title="did:key:z6MkSynthetic0099"]', { timeout: 30_000 });
  // page on to the last provider
  for (let i = 0; i < 9; i++) {
    await p.waitForFunction(() => !document.querySelector('.pager button:last-child')?.disabled, { timeout: 30_000 });
    const want = `did:key:z6MkSynthetic${String((i + 1) * 100).padStart(4, '0')}`;
    await p.click('.pager button:last-child');
    await p.waitForSelector(`.scroller [title="${want}"]`, { timeout: 30_000 });
  }
  await p.$eval('.scroller', (s) => (s.scrollTop = s.scrollHeight));
  await p.waitForSelector('.scroller [title="did:key:z6MkSynthetic0999"]', { timeout: 30_000 });
  assert.match((await p.$eval('.summary', (e) => e.textContent)) ?? '', /showing 901–1000/);
  assert.equal(await p.$eval('.pager button:last-child', (b) => b.disabled), true);
  // Sorting by price, descending, asks the daemon for that order from the first page: the most expensive (the last) first.
  await p.evaluate(() => [...document.querySelectorAll('button.sort')].find((b: HTMLButtonElement) => b.textContent?.startsWith('Price'))!.click());
  await p.evaluate(() => [...document.querySelectorAll('button.sort')].find((b: HTMLButtonElement) => b.textContent?.startsWith('Price'))!.click());
  await p.waitForFunction(() => document.querySelector('.scroller [role=row] [title]')?.getAttribute('title') === 'did:key:z6MkSynthetic0999', { timeout: 30_000 });
  assert.ok(asked.some((q) => q.get('sort') === 'price' && q.get('desc') === '1' && !q.has('after')));
  // the currency in its own span, the exact price in the title; the summary names the currency sorted first (review s43 R3 F2)
  assert.deepEqual(await p.$eval('.scroller [role=row] .c-price', (e) => [e.querySelector('.cur')?.textContent, e.getAttribute('title')]), ['USD', '0.001999 USD per job (builtin.sha256)']);
  assert.match((await p.$eval('.summary', (e) => e.textContent)) ?? '', /By price: USD prices first/);
  // and Previous goes back a page at a time to the first
  assert.equal(await p.$eval('.pager button:first-child', (b) => b.disabled), true);
  await p.click('.pager button:last-child');
  await p.waitForFunction(() => /showing 101–200/.test(document.querySelector('.summary')?.textContent ?? ''), { timeout: 30_000 });
  await p.click('.pager button:first-child');
  await p.waitForFunction(() => /showing 1–100/.test(document.querySelector('.summary')?.textContent ?? ''), { timeout: 30_000 });
  assert.equal(await p.$eval('.scroller [role=row] [title]', (e) => e.getAttribute('title')), 'did:key:z6MkSynthetic0999');
  await shot(p, 'market-1000');
  await accessible(p, 'market (1,000 providers)');
  await p.close();
});
