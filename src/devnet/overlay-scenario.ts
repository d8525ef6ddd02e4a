/**
 * The organisation scenario (`c0mpute devnet --overlay`, `npm start -- --overlay`):
 * a private overlay (its own swarm key) with a steward holding a pool/1
 * entitlement tree for two teams, a witness, two providers and two buyers.
 * Team A's first job is admitted; its second, sent while the first holds the
 * team's only device, is queued and runs once the first releases; team B asks
 * for more energy than its guarantee on an unmeasured estimate and is denied.
 * At the end: the steward's status and the ledger's attestation.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../errors.js';
import { apiCall } from '../node/api.js';
import type { WireEvent } from '../node/events.js';
import { devnetIdentity, finalError, freePort, jobMeshLine, waitFor, type Devnet } from './devnet.js';

export const OVERLAY = 'acme';

export const TREE_YAML = `# pool/1 entitlement tree of the acme overlay (energies in µJ)
entitlements:
  - { id: acme, guarantee_uj: 2000000000, guarantee_devices: 2, over_quota_weight: 0, priority: 0 }
  - { id: team-a, parent: acme, guarantee_uj: 600000000, guarantee_devices: 1, over_quota_weight: 1, priority: 2 }
  - { id: team-b, parent: acme, guarantee_uj: 300000000, guarantee_devices: 1, over_quota_weight: 1, priority: 1 }
`;

/**
 * The overlay's swarm key and its nodes' DIDs in `dir`: made on the first run, reused on every later run on the same
 * `--dir` (README "--dir"), so the steward keeps its key and with it its ledger, and the nodes their stores.
 */
export function prepareOverlay(dir: string, names: readonly string[], generateSwarmKey: () => Uint8Array): { keyFile: string; dids: Record<string, string> } {
  const keyFile = join(dir, `${OVERLAY}.key`);
  if (!existsSync(keyFile)) writeFileSync(keyFile, generateSwarmKey(), { mode: 0o600 });
  const dids = Object.fromEntries(names.map((n) => [n, devnetIdentity(join(dir, n)).did]));
  return { keyFile, dids };
}

/** Each team-a job's estimate, µJ: A1 and A2 each ask this much of team-a's guarantee. */
export const TEAM_A_ESTIMATE_UJ = 100_000_000;

/** What the scenario reads of the steward's `/v1/steward` before it sends a job. */
export interface StewardBudgetView {
  ledger: { length: number };
  teams: Array<{ id: string; guarantee_uj: number; spent_uj: number; reserved_uj: number }>;
}

const joules = (uj: number) => `${(uj / 1e6).toFixed(1)} J`;

/**
 * The scenario on a reused `--dir` (QA qaDev F1): the steward's ledger keeps every earlier run's usage (pool/1 §6.1:
 * usage is derived from the ledger, and a quota that refills on a restart is not a quota), and each run charges
 * team-a its two jobs' actual energy again. Once what is left of team-a's guarantee is less than its two jobs'
 * estimates, the steward denies A1 (UNOBSERVED_EXCEEDS_GUARANTEE: an estimate past the guarantee can only run on
 * surplus, which §4.4 forbids) or A2 after it. That is said before any job is sent, as
 * DEVNET_OVERLAY_BUDGET_SPENT naming the spent budget and the way out, not waited out. Undefined when the run fits.
 */
export function overlayBudgetShort(v: StewardBudgetView): C0Error | undefined {
  const a = v.teams.find((t) => t.id === 'team-a');
  if (!a) return undefined;
  const need = 2 * TEAM_A_ESTIMATE_UJ;
  const left = a.guarantee_uj - a.spent_uj - a.reserved_uj;
  if (left >= need) return undefined;
  const held = a.reserved_uj > 0 ? ` and holds ${joules(a.reserved_uj)} for claims still open` : '';
  return new C0Error(
    'DEVNET_OVERLAY_BUDGET_SPENT',
    `team-a has spent ${joules(a.spent_uj)} of its ${joules(a.guarantee_uj)} guarantee${held} in the ${v.ledger.length} ledger entries earlier runs on this --dir left; ` +
      `this run's A1 and A2 ask ${joules(TEAM_A_ESTIMATE_UJ)} each and only ${joules(Math.max(0, left))} is left, so the steward would deny them. ` +
      'The ledger is the usage (pool/1 §6.1): a new run does not refill it. Run the scenario with a new --dir (a new steward key, a new ledger), or without --dir',
    { field: 'dir', detail: { team: 'team-a', guarantee_uj: a.guarantee_uj, spent_uj: a.spent_uj, reserved_uj: a.reserved_uj, ledgerLength: v.ledger.length } },
  );
}

export interface ScenarioResult {
  outcomes: Record<string, string>;
  steward: Record<string, unknown>;
}

export async function runOverlayScenario(net: Devnet, render: (label: string, ev: WireEvent) => void, print: (s: string) => void): Promise<ScenarioResult> {
  const { peerIdFromDid } = await import('../node/peer-id.js');
  const { generateSwarmKey } = await import('../net/node.js');
  const names = ['steward', 'witness', 'forge', 'kiln', 'alpha', 'beta'] as const;
  const { keyFile, dids } = prepareOverlay(net.dir, names, generateSwarmKey);
  const treeFile = join(net.dir, 'tree.yaml');
  writeFileSync(treeFile, TREE_YAML);
  const ports: Record<string, number> = {};
  for (const n of names) ports[n] = await freePort();
  const stewardAddr = `/ip4/127.0.0.1/tcp/${ports.steward}/p2p/${peerIdFromDid(dids.steward!).toString()}`;
  const network = (n: string) => ({
    overlay: OVERLAY,
    swarmKeyFile: keyFile,
    listen: [`/ip4/127.0.0.1/tcp/${ports[n]}`],
    loopback: true,
    steward: dids.steward,
    // the overlay names its witness: no other key's receipt is relayed, kept or counted (docs/overlays.md "Witnesses")
    witnesses: [dids.witness],
    resyncMs: 5000,
    ...(n === 'steward' ? {} : { bootstrap: [stewardAddr] }),
  });
  const base = (n: string) => ({ log: { level: 'info', format: 'json' }, network: network(n), api: { listen: '127.0.0.1:0' } });
  print(`c0mpute devnet --overlay: private overlay "${OVERLAY}" (swarm key ${keyFile}) on 127.0.0.1, in ${net.dir}`);
  net.spawn('steward', 'steward', { ...base('steward'), roles: ['steward'], steward: { treeFile } }, ports.steward!);
  // every node starts at once (Devnet.start): the steward's address is known before it listens
  print(`  steward  ${dids.steward}  (tree: team-a 600 J / 1 device, priority 2; team-b 300 J / 1 device, priority 1)`);
  net.spawn('witness', 'witness', { ...base('witness'), roles: ['witness'] }, ports.witness!);
  print(`  witness  ${dids.witness}`);
  for (const p of ['forge', 'kiln']) {
    net.spawn(p, 'provider', {
      ...base(p),
      roles: ['provider'],
      provider: {
        tier: 'private',
        region: 'eu-west',
        detectGpus: false,
        hardware: { cpuCores: 8, memoryMiB: 16384, gpus: [] },
        // Estimator energy is watts × the time the work ran: at 60-90 W, A1 on a loaded machine (12 s instead of 4) spent more
        // than team-a's 600 J, so A2 could not be admitted past the guarantee on its estimate and expired. At 10-15 W
        // A1 stays under it even ten times slower.
        meter: { type: 'estimator', estimatorWatts: p === 'forge' ? 10 : 15 },
        workloads: { 'builtin.sha256': { executor: { type: 'builtin', name: 'builtin.sha256' }, price: { amount: p === 'forge' ? '0.002' : '0.003', currency: 'EUR' }, duration: { baseMs: 4000 } } },
      },
    }, ports[p]!);
    print(`  provider ${p.padEnd(8)} ${dids[p]}`);
  }
  for (const b of ['alpha', 'beta']) {
    net.spawn(b, 'buyer', { ...base(b), roles: ['buyer'], buyer: { policy: 'balanced', collectWindowMs: 2500, enoughOffers: 2 } }, ports[b]!);
    print(`  buyer    ${b.padEnd(8)} ${dids[b]}  (${b === 'alpha' ? 'team-a' : 'team-b'})`);
  }
  const apis: Record<string, { api: string; token: string }> = {};
  apis.steward = await net.apiOf(net.nodes.find((n) => n.name === 'steward')!);
  // a ledger kept from an earlier run on this --dir: said, and refused at once if team-a's budget no longer fits
  const before = (await apiCall(apis.steward!.api, apis.steward!.token, 'GET', '/v1/steward')) as StewardBudgetView;
  if (before.ledger.length > 0) {
    const a = before.teams.find((t) => t.id === 'team-a');
    print(`▸ the steward's ledger continues from earlier runs on this --dir: ${before.ledger.length} entries${a ? `; team-a has spent ${joules(a.spent_uj)} of its ${joules(a.guarantee_uj)}` : ''} (usage is never refilled: a new --dir starts a new ledger)`);
  }
  const short = overlayBudgetShort(before);
  if (short) throw short;
  for (const n of net.nodes) apis[n.name] ??= await net.apiOf(n);
  print('▸ waiting for both buyers to see both providers on the overlay…');
  for (const b of ['alpha', 'beta']) {
    await net.waitForMarket(b, apis[b]!, 2);
  }
  // and for the job topic's mesh to reach both providers from each buyer (DevNet.waitForJobMesh)
  const providers = net.nodes.filter((n) => n.role === 'provider').map((n) => ({ did: n.did, api: apis[n.name]! }));
  for (const b of ['alpha', 'beta']) {
    const t = Date.now();
    print(jobMeshLine(await net.waitForJobMesh(providers, apis[b]!), Date.now() - t, `  ${b}: `));
  }

  const job = (label: string, entitlement: string, uj: number, rounds: number) => ({
    label,
    spec: {
      workload: 'builtin.sha256',
      params: String(rounds),
      maxPrice: { amount: '0.01', currency: 'EUR' },
      deadlineMs: 120_000,
      entitlement,
      class: 'sha256-batch',
      energy: { uj, grade: 'Estimator' },
      input: Buffer.from(`${label} ${Date.now()}`).toString('base64'),
    },
  });
  const outcomes: Record<string, string> = {};
  const run = async (who: string, j: ReturnType<typeof job>) => {
    const r = await net.runJob(apis[who]!, j.spec, (ev) => render(j.label, ev));
    outcomes[j.label] = String(r.status);
    return r;
  };
  print('\n=== team-a sends A1; while it runs, A2 (the team has 1 device); team-b sends B1 asking 5000 J on a guess ===');
  const a1 = run('alpha', job('A1', 'team-a', TEAM_A_ESTIMATE_UJ, 1_500_000));
  // A1's end, as soon as it comes: a run that ends before A1 held the device (denied, or failed) is what the wait below
  // watches for, rather than waiting out its minute
  let a1End: Record<string, unknown> | Error | undefined;
  a1.then(
    (r) => (a1End = r),
    (e: unknown) => (a1End = e instanceof Error ? e : new Error(String(e))),
  );
  // Send A2 once A1 holds the team's device.
  await waitFor('A1 to be admitted', 60_000, async () => {
    const s = (await apiCall(apis.steward!.api, apis.steward!.token, 'GET', '/v1/steward')) as { teams: Array<{ id: string; held_devices: number }> };
    if (s.teams.find((t) => t.id === 'team-a')!.held_devices > 0) return true;
    if (a1End instanceof Error) throw finalError(a1End);
    if (a1End) throw finalError(a1NotAdmitted(a1End, s as unknown as StewardBudgetView));
    return undefined;
  });
  const a2 = run('alpha', job('A2', 'team-a', TEAM_A_ESTIMATE_UJ, 300_000));
  const b1 = run('beta', job('B1', 'team-b', 5_000_000_000, 100_000));
  await Promise.all([a1, a2, b1]);

  // The steward releases a claim when it hears the provider's receipt (gossip), which can land after the
  // buyer's run has returned: wait until no claim is open, then until the witness has cosigned that head.
  print('\n▸ waiting for the steward to release every claim and the witness to cosign its ledger head…');
  const steward0 = await waitFor('every claim released and the head cosigned', 30_000, async () => {
    const s = (await apiCall(apis.steward!.api, apis.steward!.token, 'GET', '/v1/steward')) as { ledger: { length: number }; attestation: { grade: string; witnessedLength: number }; teams: Array<{ open_claims: number }> };
    if (s.teams.some((t) => t.open_claims > 0)) return undefined;
    return s.attestation.grade === 'witnessed' && s.attestation.witnessedLength === s.ledger.length ? s : undefined;
  });
  if (outcomes.A1 !== 'completed' || outcomes.A2 !== 'completed' || outcomes.B1 !== 'denied') {
    // A2 refused on energy: A1's actual figure ran over its estimate and left too little for A2's (a loaded machine)
    const a2r = ((await a2) as { admission?: { reason?: string } }).admission?.reason;
    const a = (steward0 as unknown as StewardBudgetView).teams.find((t) => t.id === 'team-a');
    const why = a2r && a ? ` (A2: ${a2r}; team-a has now spent ${joules(a.spent_uj)} of its ${joules(a.guarantee_uj)})` : '';
    throw new C0Error('DEVNET_SCENARIO_FAILED', `unexpected outcomes: ${JSON.stringify(outcomes)}${why}`);
  }
  return { outcomes, steward: steward0 as unknown as Record<string, unknown> };
}

/** A1 ended before it held team-a's device: its budget spent (DEVNET_OVERLAY_BUDGET_SPENT), or another end (DEVNET_SCENARIO_FAILED). */
function a1NotAdmitted(r: Record<string, unknown>, s: StewardBudgetView): C0Error {
  const reason = (r as { admission?: { reason?: string } }).admission?.reason;
  const short = overlayBudgetShort(s);
  if (r.status === 'denied' && short) return short;
  return new C0Error('DEVNET_SCENARIO_FAILED', `A1 ended ${String(r.status)}${reason ? ` (${reason})` : ''} before it held team-a's device`, { detail: { status: r.status, reason } });
}
