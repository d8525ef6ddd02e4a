/**
 * The console's hash routes (ui/main.tsx): `#/market`, `#/jobs/<job>[/<overlay>]`, `#/record/<address>[/<overlay>]`…
 * Plain functions, no DOM: the unit tests run them.
 *
 * QA (session 49): `#/nonsense`, `#/pools` and `#/market?x=1` silently showed the Overview with no view highlighted;
 * the skip link (`#main`) went through the router to the Overview; `#/record/` showed the daemon's "NOT_FOUND: no
 * route GET /v1/console/record/"; `#/jobs/garbage` a bare error with no heading or way back; a short address
 * (`sha256:fffe0a7c`, as the pages show them) the daemon's ADDRESS_MALFORMED.
 */

/** The views with a route of their own. */
export const VIEWS = ['overview', 'market', 'jobs', 'reputation', 'run', 'overlays', 'record'] as const;
export type ViewName = (typeof VIEWS)[number];

export type Route =
  | { view: ViewName; arg?: string; overlay?: string }
  /** An address that is not one, under `jobs` or `record`: the page says what is wrong with it. */
  | { view: 'bad-address'; section: 'jobs' | 'record'; address: string; problem: string }
  /** A route no view has. */
  | { view: 'not-found'; path: string; later?: boolean };

const ADDRESS = /^sha256:[0-9a-f]{64}$/;

/** What is wrong with `a` as a record's content address, or undefined when it is one. */
export function addressProblem(a: string): string | undefined {
  if (ADDRESS.test(a)) return undefined;
  if (a === '') return 'no address given: a record address is sha256: followed by 64 hexadecimal digits';
  if (/^sha256:[0-9a-f]{1,63}…?$/.test(a)) return `"${a}" is a shortened address: the whole one is sha256: followed by 64 hexadecimal digits (a short address's title, on hover, holds it)`;
  return `"${a.length > 80 ? `${a.slice(0, 80)}…` : a}" is not a record address: one is sha256: followed by 64 hexadecimal digits`;
}

/**
 * The route a location hash names; undefined for a hash that is no route (`#main`, the skip link's target: the view
 * stays as it is). A query after the path (`#/market?x=1`) is ignored.
 */
export function parseRoute(hash: string, later: readonly string[] = ['pools', 'training']): Route | undefined {
  if (hash === '' || hash === '#' || hash === '#/') return { view: 'overview' };
  if (!hash.startsWith('#/')) return undefined;
  const path = hash.slice(2).split('?')[0]!;
  let parts: string[];
  try {
    parts = path.split('/').map(decodeURIComponent);
  } catch {
    return { view: 'not-found', path };
  }
  const [head = '', arg, overlay, ...rest] = parts;
  if (head === '') return { view: 'overview' };
  if (later.includes(head)) return { view: 'not-found', path, later: true };
  if (!(VIEWS as readonly string[]).includes(head)) return { view: 'not-found', path };
  const view = head as ViewName;
  if (view === 'jobs' || view === 'record') {
    if (view === 'jobs' && !arg && overlay === undefined) return { view };
    const problem = addressProblem(arg ?? '');
    if (problem) return { view: 'bad-address', section: view, address: arg ?? '', problem };
    if (rest.length) return { view: 'not-found', path };
    return { view, arg: arg!, ...(overlay ? { overlay } : {}) };
  }
  // the other views take no argument: `#/market/` is the market, `#/market/x` no page
  if ((arg !== undefined && arg !== '') || overlay !== undefined) return { view: 'not-found', path };
  return { view };
}

/** The navigation entry a route belongs to (highlighted as the current page); none for a page that does not exist. */
export function sectionOf(r: Route): string | undefined {
  if (r.view === 'not-found') return undefined;
  if (r.view === 'bad-address') return 'jobs';
  return r.view === 'record' ? 'jobs' : r.view;
}
