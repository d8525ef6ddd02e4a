/** Node configuration: defaults < file < env (C0MPUTE_*) < flags, validated with errors naming the field. */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import { checkRoleSections, envOverrides, loadConfig, mergeLayers, networksOf, parseConfig } from '../../../src/node/config.js';
import { TRAIL_KEPT_BYTES, TRAIL_KEPT_ENTRIES } from '../../../src/pools/trail.js';

const SHIPPED = new URL('../../../../config/default.yaml', import.meta.url).pathname;

function err(fn: () => unknown): C0Error {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof C0Error, `expected a C0Error, got ${String(e)}`);
    return e;
  }
  assert.fail('expected an error, nothing was thrown');
}

let dir: string;
let i = 0;
function file(text: string): string {
  const p = join(dir, `config-${i++}.yaml`);
  writeFileSync(p, text);
  return p;
}
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'c0-config-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const workload = { executor: { type: 'builtin', name: 'builtin.sha256' }, price: { amount: '0.001', currency: 'USD' } };

describe('config', () => {
  test('defaults', () => {
    const c = parseConfig(undefined);
    assert.deepEqual(c.roles, ['buyer']);
    assert.deepEqual(c.log, { level: 'info', format: 'json' });
    assert.equal(c.api.listen, '127.0.0.1:7070');
    assert.equal(c.network.overlay, 'public');
    assert.deepEqual(c.network.listen, ['/ip4/0.0.0.0/tcp/4001']);
    assert.equal(c.network.clockSkewMs, 30_000);
    assert.deepEqual(c.buyer, { policy: 'balanced', collectWindowMs: 3000, enoughOffers: 0, endWhenAllQuoted: true, offersWanted: 8, inviteAbove: 200 });
    assert.equal(c.provider, undefined);
    assert.deepEqual(parseConfig({}), c);
  });

  test('provider defaults fill in under a provider section', () => {
    const c = parseConfig({ provider: { workloads: { 'builtin.sha256': workload } } });
    const p = c.provider!;
    assert.equal(p.tier, 'community');
    assert.equal(p.slots, 1);
    assert.equal(p.offerRank, 8);
    assert.deepEqual(p.meter, { type: 'auto', estimatorWatts: 100 });
    const w = p.workloads['builtin.sha256']!;
    assert.equal(w.unit, 'job');
    assert.deepEqual(w.duration, { baseMs: 1000, perInputMiBMs: 0 });
  });

  test('the shipped config/default.yaml parses', () => {
    const c = loadConfig({ file: SHIPPED });
    assert.deepEqual(c.roles, ['buyer']);
    assert.equal(c.api.listen, '127.0.0.1:7070');
  });

  test('precedence: defaults < file < env < flags', () => {
    const f = file('roles: [provider]\nlog: { level: debug }\nnetwork:\n  overlay: from-file\n  bootstrap: ["/ip4/1.2.3.4/tcp/1/p2p/12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA"]\napi:\n  listen: 127.0.0.1:9000\n');
    const fileOnly = loadConfig({ file: f });
    assert.deepEqual(fileOnly.roles, ['provider']);
    assert.equal(fileOnly.log.level, 'debug');
    assert.equal(fileOnly.log.format, 'json'); // default kept beside a file value in the same section
    assert.equal(fileOnly.network.overlay, 'from-file');
    assert.equal(fileOnly.api.listen, '127.0.0.1:9000');

    const env = { C0MPUTE_OVERLAY: 'from-env', C0MPUTE_ROLES: 'provider, buyer', C0MPUTE_LOG_LEVEL: 'warn', C0MPUTE_LISTEN: '/ip4/127.0.0.1/tcp/0,/ip4/127.0.0.1/tcp/1' };
    const withEnv = loadConfig({ file: f, env });
    assert.equal(withEnv.network.overlay, 'from-env');
    assert.deepEqual(withEnv.roles, ['provider', 'buyer']);
    assert.equal(withEnv.log.level, 'warn');
    assert.deepEqual(withEnv.network.listen, ['/ip4/127.0.0.1/tcp/0', '/ip4/127.0.0.1/tcp/1']);
    assert.deepEqual(withEnv.network.bootstrap, ['/ip4/1.2.3.4/tcp/1/p2p/12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA']); // untouched by env
    assert.equal(withEnv.api.listen, '127.0.0.1:9000');

    const withFlags = loadConfig({ file: f, env, flags: { network: { overlay: 'from-flags' }, roles: ['witness'] } });
    assert.equal(withFlags.network.overlay, 'from-flags');
    assert.deepEqual(withFlags.roles, ['witness']);
    assert.equal(withFlags.log.level, 'warn'); // env still applies where no flag is given
    assert.deepEqual(withFlags.network.listen, ['/ip4/127.0.0.1/tcp/0', '/ip4/127.0.0.1/tcp/1']);
  });

  test('env variables map to their fields; unrelated variables are ignored', () => {
    assert.deepEqual(envOverrides({ C0MPUTE_API: '127.0.0.1:0', C0MPUTE_LOG_FORMAT: 'pretty', HOME: '/root', C0MPUTE_BOOTSTRAP: '' }), { api: { listen: '127.0.0.1:0' }, log: { format: 'pretty' } });
  });

  test('a list variable of blanks and commas only is as an empty one: ignored, not the empty list (QA qaOps F8)', () => {
    for (const v of ['', ' ', ' , ,', '\t']) {
      assert.deepEqual(envOverrides({ C0MPUTE_ROLES: v, C0MPUTE_LISTEN: v, C0MPUTE_ANNOUNCE: v, C0MPUTE_BOOTSTRAP: v }), {}, JSON.stringify(v));
    }
    const f = file('roles: [witness]\n');
    assert.deepEqual(loadConfig({ file: f, env: { C0MPUTE_ROLES: ' ' } }).roles, ['witness']);
    assert.deepEqual(loadConfig({ file: f, env: { C0MPUTE_ROLES: ' buyer , ' } }).roles, ['buyer']);
  });

  test('a node with no role on any overlay is refused at start, CONFIG_INVALID field roles (QA qaOps F8)', () => {
    const none = parseConfig({ roles: [] });
    assert.throws(() => checkRoleSections(none, 'x.yaml'), (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID' && e.field === 'roles' && /^x\.yaml: roles: empty/.test(e.message));
    // an overlay that names a role of its own is a role
    assert.doesNotThrow(() => checkRoleSections(parseConfig({ roles: [], overlays: [{ overlay: 'acme', roles: ['buyer'], listen: ['/ip4/127.0.0.1/tcp/0'] }] })));
  });

  test('mergeLayers: objects merge, arrays and scalars replace, undefined does not erase', () => {
    assert.deepEqual(mergeLayers({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { c: [3] }, d: undefined }, 'not an object'), { a: { b: 1, c: [3] }, d: 1 });
  });

  test('invalid values are CONFIG_INVALID naming the field', () => {
    const cases: Array<[unknown, string]> = [
      [{ provider: { workloads: { 'demo.work': { ...workload, price: { amount: '1.2.3', currency: 'USD' } } } } }, 'provider.workloads.demo.work.price.amount'],
      [{ provider: { workloads: { 'demo.work': { ...workload, price: { amount: '1', currency: 'usd' } } } } }, 'provider.workloads.demo.work.price.currency'],
      [{ provider: { workloads: { 'demo.work': { ...workload, unit: 'hour' } } } }, 'provider.workloads.demo.work.unit'],
      [{ provider: { workloads: { 'demo.work': { ...workload, executor: { type: 'builtin', name: 'builtin.nope' } } } } }, 'provider.workloads.demo.work.executor.name'],
      [{ provider: { workloads: { 'demo.work': { ...workload, executor: { type: 'exec', command: [] } } } } }, 'provider.workloads.demo.work.executor.command'],
      [{ provider: { slots: 0 } }, 'provider.slots'],
      // held whole in memory; an output larger than a buyer takes could never be delivered
      [{ provider: { maxInputBytes: 1024 * 1024 * 1024 + 1 } }, 'provider.maxInputBytes'],
      [{ provider: { maxOutputBytes: 64 * 1024 * 1024 + 1 } }, 'provider.maxOutputBytes'],
      // below the default target, peers would cut the provider's longer presence windows
      [{ provider: { presenceTargetPerMarket: 1 } }, 'provider.presenceTargetPerMarket'],
      [{ provider: { tier: 'gold' } }, 'provider.tier'],
      [{ provider: { hardware: { cpuCores: 1.5 } } }, 'provider.hardware.cpuCores'],
      [{ api: { listen: 'localhost' } }, 'api.listen'],
      [{ api: { listen: '127.0.0.1:99999' } }, 'api.listen'],
      [{ api: { listen: '[nope]:7070' } }, 'api.listen'],
      // refused at start, not at listen or dial (libp2p's parse errors were exit 70)
      [{ network: { listen: ['garbage'] } }, 'network.listen.0'],
      [{ network: { announce: ['/ip4/1.2.3.4/tcp/1', 'garbage'] } }, 'network.announce.1'],
      [{ network: { bootstrap: ['/ip4/127.0.0.1/tcp/4001/p2p/notapeerid'] } }, 'network.bootstrap.0'],
      // a mistyped DID would start and fail every job
      [{ network: { steward: 'did:key:zzz' } }, 'network.steward'],
      [{ witness: { stewards: ['did:key:zzz'] } }, 'witness.stewards.0'],
      [{ roles: ['provider', 'king'] }, 'roles.1'],
      [{ buyer: { policy: 'random' } }, 'buyer.policy'],
      [{ network: { overlay: 'Has Spaces' } }, 'network.overlay'],
      [{ log: { level: 'loud' } }, 'log.level'],
    ];
    for (const [raw, field] of cases) {
      const e = err(() => parseConfig(raw));
      assert.equal(e.code, 'CONFIG_INVALID', field);
      assert.equal(e.field, field);
    }
  });

  test('a workload name the schema refuses says why (a namespace like infer.llm), not only "Invalid key in record"', () => {
    const e = err(() => parseConfig({ provider: { workloads: { slow: workload } } }));
    assert.equal(e.code, 'CONFIG_INVALID');
    assert.equal(e.field, 'provider.workloads.slow');
    assert.match(e.message, /provider\.workloads\.slow: not a valid key: a workload namespace like infer\.llm/);
  });

  test('a bad value from a flag or the environment is named as theirs, not the file’s', () => {
    const f = file('api:\n  listen: 127.0.0.1:7070\n');
    const byFlag = err(() => loadConfig({ file: f, flags: { api: { listen: '127.0.0.1:99999' } } }));
    assert.equal(byFlag.field, 'api.listen');
    assert.match(byFlag.message, /^the command line: api\.listen/);
    const byEnv = err(() => loadConfig({ file: f, env: { C0MPUTE_LISTEN: 'garbage' } }));
    assert.match(byEnv.message, /^the environment \(C0MPUTE_\*\): network\.listen\.0/);
    assert.match(err(() => loadConfig({ flags: { api: { listen: '127.0.0.1:99999' } } })).message, /^the command line: api\.listen/, 'no config file');
    const inFile = err(() => loadConfig({ file: file('api:\n  listen: 127.0.0.1:99999\n') }));
    assert.match(inFile.message, /config-\d+\.yaml: api\.listen/);
  });

  test("an unknown key in the file's mapping is the file's, though a flag or variable sets another key of that mapping (QA qaOps F3)", () => {
    const f = file('network: { lisen: ["/ip4/127.0.0.1/tcp/1"] }\n');
    for (const o of [{ flags: { network: { listen: ['/ip4/127.0.0.1/tcp/2'] } } }, { env: { C0MPUTE_LISTEN: '/ip4/127.0.0.1/tcp/2' } }]) {
      const e = err(() => loadConfig({ file: f, ...o }));
      assert.match(e.message, /^\S*config-\d+\.yaml: network: Unrecognized key: "lisen"/, JSON.stringify(o));
    }
  });

  test('an unknown key names the key meant when one is near it, at any depth; a key near none says nothing more', () => {
    const at = (raw: unknown) => err(() => parseConfig(raw, 'config.yaml')).message;
    // before, only: buyer: Unrecognized key: "collectWindow"
    assert.equal(at({ buyer: { collectWindow: 1500 } }), 'config.yaml: buyer: Unrecognized key: "collectWindow" ("collectWindow": did you mean "collectWindowMs"?)');
    assert.match(at({ network: { lisen: [] } }), /network: Unrecognized key: "lisen" \("lisen": did you mean "listen"\?\)/);
    assert.match(at({ rols: ['buyer'] }), /\(top\): Unrecognized key: "rols" \("rols": did you mean "roles"\?\)/);
    const workload = { executor: { type: 'builtin', name: 'builtin.sha256' }, price: { amount: '0.001', currency: 'USD' }, duraton: { baseMs: 1 } };
    assert.match(at({ roles: ['provider'], provider: { workloads: { 'builtin.sha256': workload } } }), /provider\.workloads\.builtin\.sha256: Unrecognized key: "duraton" \("duraton": did you mean "duration"\?\)/);
    assert.equal(at({ buyer: { zzzzzzzzzz: 1 } }), 'config.yaml: buyer: Unrecognized key: "zzzzzzzzzz"');
  });

  test('files a config file names are relative to its directory, not to where the daemon starts', () => {
    const f = file('network:\n  overlay: acme\n  swarmKeyFile: overlay.key\noverlays:\n  - overlay: beta\n    swarmKeyFile: keys/beta.key\n    listen: ["/ip4/127.0.0.1/tcp/0"]\nsteward:\n  treeFile: tree.yaml\n');
    const c = loadConfig({ file: f });
    assert.equal(c.network.swarmKeyFile, join(dirname(f), 'overlay.key'));
    assert.equal(c.overlays[0]!.swarmKeyFile, join(dirname(f), 'keys', 'beta.key'));
    assert.equal(c.steward?.treeFile, join(dirname(f), 'tree.yaml'));
    assert.equal(loadConfig({ file: file('network:\n  overlay: acme\n  swarmKeyFile: /abs/k.key\n') }).network.swarmKeyFile, '/abs/k.key');
  });

  test('a swarm key on the overlay named public (the open network, with its stores) is refused: a private overlay needs its own name', () => {
    // the operator adds only the key, leaving `overlay` at its default: the node would run a keyed network on the open network's stores
    const bare = err(() => loadConfig({ file: file('network:\n  swarmKeyFile: overlay.key\n') }));
    assert.equal(bare.code, 'CONFIG_INVALID');
    assert.equal(bare.field, 'network.overlay');
    assert.match(bare.message, /needs its own name; "public" is the open network/);
    const beside = err(() => loadConfig({ file: file('network:\n  overlay: acme\n  swarmKeyFile: a.key\noverlays:\n  - overlay: public\n    swarmKeyFile: b.key\n    listen: ["/ip4/127.0.0.1/tcp/0"]\n') }));
    assert.equal(beside.field, 'overlays.0.overlay');
  });

  test("a pool member's trail bounds: pool.maxKeptDispatches and pool.maxKeptBytes, defaults the trail's, positive whole numbers", () => {
    const base = { roster: '/r.cose', membership: '/m.cose' };
    assert.deepEqual([parseConfig({ pool: base }).pool?.maxKeptDispatches, parseConfig({ pool: base }).pool?.maxKeptBytes], [TRAIL_KEPT_ENTRIES, TRAIL_KEPT_BYTES]);
    const set = parseConfig({ pool: { ...base, maxKeptDispatches: 100, maxKeptBytes: 1_048_576 } }).pool!;
    assert.deepEqual([set.maxKeptDispatches, set.maxKeptBytes], [100, 1_048_576]);
    for (const key of ['maxKeptDispatches', 'maxKeptBytes']) {
      for (const bad of [0, -1, 1.5, '4096', 1e18]) {
        const e = err(() => parseConfig({ pool: { ...base, [key]: bad } }, 'c.yaml'));
        assert.equal(e.code, 'CONFIG_INVALID', `${key}: ${String(bad)}`);
        assert.equal(e.field, `pool.${key}`);
        assert.match(e.message, new RegExp(`^c\\.yaml: pool\\.${key}: `));
      }
    }
  });

  test("a pool member's roster and membership, and a provider's powercapRoot, are relative to the config file's directory too", () => {
    const f = file('pool:\n  roster: roster.cose\n  membership: pool/membership.cose\nprovider:\n  meter:\n    powercapRoot: powercap\n');
    const c = loadConfig({ file: f });
    assert.equal(c.pool?.roster, join(dirname(f), 'roster.cose'));
    assert.equal(c.pool?.membership, join(dirname(f), 'pool', 'membership.cose'));
    assert.equal(c.provider?.meter.powercapRoot, join(dirname(f), 'powercap'));
    const abs = loadConfig({ file: file('pool:\n  roster: /abs/r.cose\n  membership: /abs/m.cose\nprovider:\n  meter:\n    powercapRoot: /sys/class/powercap\n') });
    assert.equal(abs.pool?.roster, '/abs/r.cose');
    assert.equal(abs.provider?.meter.powercapRoot, '/sys/class/powercap');
  });

  test('a roster or membership found only in the directory the daemon starts in (where earlier builds looked) is still taken from there', () => {
    const f = file('pool:\n  roster: roster.cose\n  membership: membership.cose\n');
    const cwd = mkdtempSync(join(tmpdir(), 'c0-cwd-'));
    writeFileSync(join(cwd, 'roster.cose'), 'r');
    const was = process.cwd();
    process.chdir(cwd);
    try {
      const c = loadConfig({ file: f });
      assert.equal(c.pool?.roster, join(realpathSync(cwd), 'roster.cose'), 'only in the working directory: taken from there');
      assert.equal(c.pool?.membership, join(dirname(f), 'membership.cose'), 'found nowhere: beside the config file, where the error will name it');
      writeFileSync(join(dirname(f), 'roster.cose'), 'r');
      assert.equal(loadConfig({ file: f }).pool?.roster, join(dirname(f), 'roster.cose'), 'beside the config file wins');
    } finally {
      process.chdir(was);
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  test('a bootstrap address without /p2p/<PeerId> is still taken (the node learns the PeerId when it dials)', () => {
    assert.deepEqual(parseConfig({ network: { bootstrap: ['/ip4/127.0.0.1/tcp/4001'] } }).network.bootstrap, ['/ip4/127.0.0.1/tcp/4001']);
    // and the refusal of one that does not parse says so: it read "a multiaddr, ending in /p2p/<PeerId> …" (QA s49 F6)
    for (const bad of ['garbage', '/ip4/127.0.0.1/tcp/4001/p2p/notapeerid']) {
      const e = err(() => parseConfig({ network: { bootstrap: [bad] } }));
      assert.equal(e.code, 'CONFIG_INVALID');
      assert.match(e.message, /the \/p2p\/<PeerId> part is optional/);
      assert.doesNotMatch(e.message, /ending in \/p2p/);
    }
  });

  test('api.listen takes host:port and [IPv6]:port', () => {
    for (const listen of ['127.0.0.1:0', 'localhost:7070', '[::1]:7070', '[::]:0', '0.0.0.0:65535']) assert.equal(parseConfig({ api: { listen } }).api.listen, listen);
  });

  test('a workload name that is not a namespace is refused', () => {
    const e = err(() => parseConfig({ provider: { workloads: { x: workload } } }));
    assert.equal(e.code, 'CONFIG_INVALID');
    assert.ok(e.field?.startsWith('provider.workloads'), e.field);
  });

  test('an invalid env value is refused like a file value', () => {
    const e = err(() => loadConfig({ env: { C0MPUTE_LOG_LEVEL: 'chatty' } }));
    assert.equal(e.code, 'CONFIG_INVALID');
    assert.equal(e.field, 'log.level');
  });

  test('unknown keys are refused, at the top and nested', () => {
    for (const [raw, field] of [
      [{ rolez: ['buyer'] }, ''],
      [{ network: { lisen: [] } }, 'network'],
      [{ provider: { workloads: { 'demo.work': { ...workload, priority: 1 } } } }, 'provider.workloads.demo.work'],
    ] as const) {
      const e = err(() => parseConfig(raw));
      assert.equal(e.code, 'CONFIG_INVALID');
      assert.equal(e.field, field);
    }
    const e = err(() => loadConfig({ file: file('api:\n  listen: 127.0.0.1:1\n  token: abc\n') }));
    assert.equal(e.code, 'CONFIG_INVALID');
    assert.equal(e.field, 'api');
  });

  test('a `__proto__` key is an unknown key like any other, at the top and nested: never read as the settings it holds', () => {
    // merged by assignment, a top-level `__proto__:` set the prototype of the merged settings: a mapping there read as
    // top-level settings (the API moved to the port it named) and a scalar was dropped without a word
    for (const [text, field] of [
      ["__proto__: { api: { listen: '127.0.0.1:17104' } }\n", ''],
      ['__proto__: { roles: [provider] }\n', ''],
      ['__proto__: 5\n', ''],
      ['buyer: { __proto__: { policy: cheapest } }\n', 'buyer'],
    ] as const) {
      const e = err(() => loadConfig({ file: file(text) }));
      assert.equal(e.code, 'CONFIG_INVALID', text);
      assert.equal(e.field, field, text);
      assert.match(e.message, /Unrecognized key: "__proto__"/);
    }
    // and the merge keeps such a key as an own key, whichever layer it comes from
    const m = mergeLayers(JSON.parse('{"__proto__": {"roles": ["provider"]}}'), { log: { level: 'warn' } });
    assert.equal(Object.getPrototypeOf(m), Object.prototype);
    assert.deepEqual(Object.keys(m), ['__proto__', 'log']);
    assert.equal((m as { roles?: unknown }).roles, undefined);
  });

  test('a missing file is CONFIG_UNREADABLE; bad YAML is CONFIG_NOT_YAML; an empty file is all defaults', () => {
    assert.equal(err(() => loadConfig({ file: join(dir, 'missing.yaml') })).code, 'CONFIG_UNREADABLE');
    assert.equal(err(() => loadConfig({ file: dir })).code, 'CONFIG_UNREADABLE');
    assert.equal(err(() => loadConfig({ file: file('roles: [buyer\nlog: {') })).code, 'CONFIG_NOT_YAML');
    assert.equal(err(() => loadConfig({ file: file('a: 1\na: 2\n') })).code, 'CONFIG_NOT_YAML');
    assert.deepEqual(loadConfig({ file: file('') }), parseConfig({}));
  });

  test('overlays: each runs with its own roles, else the node\'s; one named twice, or a steward on two, is refused at parse', () => {
    const c = parseConfig({ roles: ['buyer', 'witness'], overlays: [{ overlay: 'labs', roles: ['provider'] }, { overlay: 'ops' }] });
    assert.deepEqual(
      networksOf(c).map((n) => [n.overlay, n.roles]),
      [
        ['public', ['buyer', 'witness']],
        ['labs', ['provider']],
        ['ops', ['buyer', 'witness']],
      ],
    );
    const twice = err(() => parseConfig({ overlays: [{ overlay: 'labs' }, { overlay: 'labs' }] }, 'c.yaml'));
    assert.deepEqual([twice.code, twice.field], ['CONFIG_INVALID', 'overlays']);
    assert.match(twice.message, /^c\.yaml: overlays: overlay "labs" is configured twice/);
    assert.equal(err(() => parseConfig({ network: { overlay: 'labs' }, overlays: [{ overlay: 'labs' }] })).field, 'overlays');
    const stewards = err(() => parseConfig({ roles: ['steward'], overlays: [{ overlay: 'labs' }] }));
    assert.deepEqual([stewards.code, stewards.field], ['CONFIG_INVALID', 'overlays']);
    assert.match(stewards.message, /steward of at most one overlay/);
    // a steward on one overlay only is fine
    assert.deepEqual(networksOf(parseConfig({ roles: ['buyer'], overlays: [{ overlay: 'labs', roles: ['steward'] }] }))[1]!.roles, ['steward']);
  });

  test('a file that is YAML but not a mapping is CONFIG_INVALID (not silently all defaults)', () => {
    for (const text of ['- just\n- a list\n', 'roles\n', '42\n']) {
      const e = err(() => loadConfig({ file: file(text) }));
      assert.equal(e.code, 'CONFIG_INVALID', text);
      assert.equal(e.field, '');
    }
  });
});
