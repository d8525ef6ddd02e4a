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
import { devnetIdentity, freePort, jobMeshLine, waitFor, type Devnet } from './devnet.js';

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
  for (const n of net.nodes) apis[n.name] = await net.apiOf(n);
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
  const a1 = run('alpha', job('A1', 'team-a', 100_000_000, 1_500_000));
  // Send A2 once A1 holds the team's device.
  await waitFor('A1 to be admitted', 60_000, async () => {
    const s = (await apiCall(apis.steward!.api, apis.steward!.token, 'GET', '/v1/steward')) as { teams: Array<{ id: string; held_devices: number }> };
    return s.teams.find((t) => t.id === 'team-a')!.held_devices > 0 ? true : undefined;
  });
  const a2 = run('alpha', job('A2', 'team-a', 100_000_000, 300_000));
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
    throw new C0Error('DEVNET_SCENARIO_FAILED', `unexpected outcomes: ${JSON.stringify(outcomes)}`);
  }
  return { outcomes, steward: steward0 as unknown as Record<string, unknown> };
}
