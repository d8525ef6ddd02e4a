/**
 * The operator's console (issue #15; docs/console.md): the app shell, the
 * navigation and a hash router. Each view lives in views/; later issues add
 * pools and training runs as further entries in NAV.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { peer, requireKey, startFeed, useFeedState } from './lib.js';
import { parseRoute, sectionOf, type Route } from './route.js';
import { Overview } from './views/overview.js';
import { Market } from './views/market.js';
import { Jobs, JobPage } from './views/jobs.js';
import { Reputation } from './views/reputation.js';
import { RunJob } from './views/run.js';
import { Overlays } from './views/overlays.js';
import { RecordPage } from './views/record.js';

interface NavItem {
  path: string;
  label: string;
  /** Not built yet: shown, marked as later, not a link. */
  later?: boolean;
}

export const NAV: NavItem[] = [
  { path: 'overview', label: 'Overview' },
  { path: 'market', label: 'Market' },
  { path: 'jobs', label: 'Jobs' },
  { path: 'reputation', label: 'Reputation' },
  { path: 'run', label: 'Run a job' },
  { path: 'overlays', label: 'Overlays' },
  { path: 'pools', label: 'Pools', later: true },
  { path: 'training', label: 'Training', later: true },
];

function useRoute(): Route {
  // a hash that is no route (the skip link's `#main`) leaves the view as it is
  const [r, set] = useState<Route>(() => parseRoute(window.location.hash) ?? { view: 'overview' });
  useEffect(() => {
    const on = () => {
      const next = parseRoute(window.location.hash);
      if (next) set(next);
    };
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return r;
}

function View({ route }: { route: Route }) {
  switch (route.view) {
    case 'market':
      return <Market />;
    case 'jobs':
      return route.arg ? <JobPage address={route.arg} overlay={route.overlay} /> : <Jobs />;
    case 'reputation':
      return <Reputation />;
    case 'run':
      return <RunJob />;
    case 'overlays':
      return <Overlays />;
    case 'record':
      return <RecordPage address={route.arg ?? ''} overlay={route.overlay} />;
    case 'bad-address':
      return (
        <>
          <h1 tabIndex={-1}>{route.section === 'jobs' ? 'Job' : 'Record'}: no such address</h1>
          <p class="error" role="alert">
            {peer(route.problem)}
          </p>
          <p>
            <a href="#/jobs">← all jobs</a>
          </p>
        </>
      );
    case 'not-found':
      return (
        <>
          <h1 tabIndex={-1}>No such page</h1>
          <p>
            {route.later ? (
              <>
                <code>#/{peer(route.path)}</code> comes in a later release.
              </>
            ) : (
              <>
                The console has no page <code>#/{peer(route.path)}</code>.
              </>
            )}{' '}
            Its pages:
          </p>
          <ul>
            {NAV.filter((n) => !n.later).map((n) => (
              <li key={n.path}>
                <a href={`#/${n.path}`}>{n.label}</a>
              </li>
            ))}
          </ul>
        </>
      );
    default:
      return <Overview />;
  }
}

function App() {
  const route = useRoute();
  const feed = useFeedState();
  const section = sectionOf(route);
  useEffect(() => {
    const item = NAV.find((n) => n.path === section);
    document.title = `${item?.label ?? (route.view === 'not-found' ? 'No such page' : 'Console')} · c0mpute console`;
    // A new view: move focus to its heading so keyboard and screen-reader users land on it.
    document.querySelector<HTMLElement>('main h1')?.focus();
  }, [JSON.stringify(route)]);
  return (
    <>
      {/* to the main element without a route change: `#main` is no route (ui/route.ts), and focus moves here */}
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="top">
        <span class="brand">c0mpute console</span>
        <span class={`feed ${feed === 'live' ? 'on' : 'off'}`} role="status">
          {feed === 'live' ? '● live' : feed === 'stale' ? '○ the node is not answering; reconnecting…' : '○ reconnecting…'}
        </span>
        <form method="post" action="/ui/logout" class="logout">
          <button type="submit">Log out</button>
        </form>
      </header>
      <nav aria-label="Views">
        <ul>
          {NAV.map((n) => (
            <li key={n.path}>
              {n.later ? (
                <span class="later" aria-disabled="true" title="coming in a later release">
                  {n.label} <small>(later)</small>
                </span>
              ) : (
                <a href={`#/${n.path}`} aria-current={section === n.path ? 'page' : undefined}>
                  {n.label}
                </a>
              )}
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        <View route={route} />
      </main>
    </>
  );
}

// The session's key from the login link's redirect (or this tab's storage); without one the login page says what to do.
if (requireKey()) {
  startFeed();
  render(<App />, document.getElementById('app')!);
}
