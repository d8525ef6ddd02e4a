// What starts but is likely not what was meant is said at start (a warn line each): a C0MPUTE_* variable c0mpute does
// not read (a typo like C0MPUTE_ROLE), and a role's config section on a node none of whose overlays runs that role
// (the shipped config.yaml says "uncomment to sell compute (and add provider to roles)").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENV_VARS, envWarnings, loadConfig, type ConfigWarning } from '../../../src/node/config.js';

// compiled to dist/test/unit/node/: the sources are four levels up
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

test('every C0MPUTE_* variable the sources and bin/c0mpute.js read (env.C0MPUTE_…) is on the one known list (so none of them is ever called a typo)', () => {
  const named = new Set<string>();
  for (const f of [...walk(join(ROOT, 'src')), join(ROOT, 'bin', 'c0mpute.js')]) for (const m of readFileSync(f, 'utf8').matchAll(/env(?:\.|\[['"])(C0MPUTE_[A-Z0-9_]+)/g)) named.add(m[1]!);
  assert.ok(named.has('C0MPUTE_HOME') && named.has('C0MPUTE_API_TIMEOUT') && named.has('C0MPUTE_BUNDLE'), 'the scan finds the CLI’s own and the launcher’s');
  assert.deepEqual([...named].filter((n) => !(ENV_VARS as readonly string[]).includes(n)).sort(), []);
});

test('a misspelt C0MPUTE_* variable is warned about, naming the nearest known one; known and test variables are not', () => {
  const w = envWarnings({ C0MPUTE_ROLE: 'witness', C0MPUTE_BOOTSTRAPS: '/ip4/1.2.3.4/tcp/1', PATH: '/bin', HOME: '/root' });
  assert.deepEqual(w.map((x) => [x.code, x.field]), [['CONFIG_ENV_UNKNOWN', 'C0MPUTE_BOOTSTRAPS'], ['CONFIG_ENV_UNKNOWN', 'C0MPUTE_ROLE']]);
  assert.match(w[0]!.message, /C0MPUTE_BOOTSTRAPS.*did you mean C0MPUTE_BOOTSTRAP\?/);
  assert.match(w[1]!.message, /C0MPUTE_ROLE.*did you mean C0MPUTE_ROLES\?/);
  const quiet = Object.fromEntries(ENV_VARS.map((n) => [n, 'x']));
  assert.deepEqual(envWarnings({ ...quiet, C0MPUTE_TEST_SECRET: 'x', C0MPUTE_KEEP_TEST_DIRS: '1' }), []);
});

test('loadConfig reports the environment’s typos through its warnings', () => {
  const warnings: ConfigWarning[] = [];
  const c = loadConfig({ env: { C0MPUTE_ROLE: 'witness' }, warnings });
  assert.deepEqual(c.roles, ['buyer'], 'the typo is still ignored');
  assert.deepEqual(warnings.map((w) => w.field), ['C0MPUTE_ROLE']);
});

test('a role’s section that no overlay’s roles read is one warning naming each such section', () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-cfg-warn-'));
  try {
    const load = (yaml: string, env: NodeJS.ProcessEnv = {}) => {
      const file = join(dir, 'config.yaml');
      writeFileSync(file, yaml);
      const warnings: ConfigWarning[] = [];
      loadConfig({ file, env, warnings });
      return warnings;
    };
    const provider = 'provider:\n  workloads:\n    demo.sha: { executor: { type: builtin, name: builtin.sha256 }, price: { amount: "0.001", currency: USD } }\n';
    const pool = 'pool: { roster: r.cose, membership: m.cose }\n';
    const steward = 'steward: { treeFile: tree.yaml }\n';

    let w = load(`roles: [buyer]\n${provider}${pool}${steward}witness: { maxStewards: 5 }\n`);
    assert.equal(w.length, 1, 'one warning');
    assert.equal(w[0]!.code, 'CONFIG_SECTION_UNREAD');
    assert.equal(w[0]!.field, 'provider,pool,steward,witness.maxStewards');
    assert.match(w[0]!.message, /provider, pool \(read only with the provider role\)|provider \(read only with the provider role\)/);
    assert.match(w[0]!.message, /roles: buyer/);

    // read: the role on the node, or on one overlay only, or given by the environment
    assert.deepEqual(load(`roles: [buyer, provider]\n${provider}${pool}`), []);
    assert.deepEqual(load(`roles: [buyer]\noverlays: [{ overlay: acme, roles: [provider] }]\n${provider}`), []);
    assert.deepEqual(load(provider, { C0MPUTE_ROLES: 'provider' }), []);
    assert.deepEqual(load(`roles: [steward]\n${steward}`), []);
    // witness.stewards is read by every node (whose witness records it keeps outside the caps)
    assert.deepEqual(load('roles: [buyer]\nwitness: { stewards: [] }\n'), []);
    // an overlay that runs only the buyer role does not make the node's provider role read it less
    assert.deepEqual(load(`roles: [provider]\noverlays: [{ overlay: acme, roles: [buyer] }]\n${provider}`), []);
    // the role only on the node, none on its overlays that name their own: still read on network
    w = load(`roles: [buyer]\noverlays: [{ overlay: acme, roles: [witness] }]\n${provider}witness: { maxStewards: 5 }\n`);
    assert.equal(w[0]?.field, 'provider');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the shipped config (config/default.yaml) starts without a warning', () => {
  const warnings: ConfigWarning[] = [];
  loadConfig({ file: join(ROOT, 'config', 'default.yaml'), env: {}, warnings });
  assert.deepEqual(warnings, []);
});
