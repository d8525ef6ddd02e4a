/**
 * Overlay commands: `overlay create <name>` writes a private overlay's
 * pre-shared key (the swarm-key format of `@libp2p/pnet`, mode 0600) and prints
 * the config to paste; `overlay list` shows the overlays of the running node
 * with their peers and the providers each knows. See docs/overlays.md.
 */
import { chmodSync, closeSync, fsyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { C0Error } from '../../errors.js';
import { apiCall } from '../../node/api-client.js';
import { out, outJson } from '../context.js';
import { osReason } from '../../util/os-reason.js';
import { makeDirs } from '../../util/make-dirs.js';
import { globals } from './index.js';
import { requireDaemon } from '../daemon-client.js';

/** Port suggested for a first private overlay (the public network defaults to 4001; two overlays cannot share a port). */
const SUGGESTED_PORT = 4101;

/** The name rule is the config's own (`network.overlay`), checked by the config schema itself so the two cannot drift. */
export async function checkOverlayName(name: string): Promise<string> {
  // the config schema is loaded here, not at the top: other commands should not pay for it
  const { parseConfig } = await import('../../node/config.js');
  if (name === 'public') throw new C0Error('OVERLAY_NAME_INVALID', '"public" is the open network, which has no key; choose another name', { field: 'name' });
  try {
    parseConfig({ network: { overlay: name } });
  } catch {
    throw new C0Error('OVERLAY_NAME_INVALID', `overlay name "${name.slice(0, 80)}" is not valid: 1 to 32 characters, lower-case letters, digits and "-", not starting with "-"`, { field: 'name' });
  }
  return name;
}

/** Write a new swarm key to `path` (mode 0600), refusing to replace an existing file. */
export async function writeSwarmKeyFile(path: string): Promise<void> {
  // Loaded here, not at the top: the network module pulls in libp2p, which other commands should not pay for.
  const { generateSwarmKey } = await import('../../net/node.js');
  // its directory made here, as any `--out`'s: one that cannot be (a file in the path, /proc) is OUTPUT_UNWRITABLE, not
  // a bare EEXIST (a bug's exit 70) nor mkdirSync's recursive form, which never returns under /proc (util/make-dirs.ts)
  makeDirs(dirname(path), { code: 'OUTPUT_UNWRITABLE', field: 'out', what: `cannot write ${path}`, mode: 0o700 });
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new C0Error('OVERLAY_KEY_EXISTS', `${path} already exists; an overlay key is never overwritten (members holding it would be cut off): remove it yourself or pass --out`, { field: 'out' });
    // its directory is there (made above): ENOENT is a file system that takes no new files in it, such as /proc
    const why = code === 'ENOENT' ? `${dirname(path)} takes no new files (ENOENT)` : osReason(e);
    throw new C0Error('OVERLAY_KEY_UNWRITABLE', `cannot write ${path}: ${why}`, { field: 'out' });
  }
  const key = generateSwarmKey();
  try {
    writeSync(fd, key);
    fsyncSync(fd);
    closeSync(fd);
    chmodSync(path, 0o600);
  } catch (e) {
    rmSync(path, { force: true });
    throw new C0Error('OVERLAY_KEY_UNWRITABLE', `cannot write ${path}: ${osReason(e)}`, { field: 'out' });
  } finally {
    key.fill(0);
  }
}

/** The config to paste, for a node that joins the overlay beside the public network and for one that is only on it. */
export function configSnippets(name: string, keyFile: string, bootstrapHint: string): { beside: string; only: string } {
  const beside = [
    'overlays:',
    `  - overlay: ${name}`,
    `    swarmKeyFile: ${keyFile}`,
    `    listen: ['/ip4/0.0.0.0/tcp/${SUGGESTED_PORT}']   # its own port: not the public network's`,
    `    bootstrap: []   # other members, e.g. ${bootstrapHint}`,
    '    # allowlist: [did:key:z6Mk…, …]   # optional: only these DIDs may connect (every member lists the same)',
  ].join('\n');
  const only = ['network:', `  overlay: ${name}`, `  swarmKeyFile: ${keyFile}`, `  listen: ['/ip4/0.0.0.0/tcp/${SUGGESTED_PORT}']`, `  bootstrap: []   # other members, e.g. ${bootstrapHint}`, '  # allowlist: [did:key:z6Mk…, …]'].join('\n');
  return { beside, only };
}


interface OverlayView {
  overlay: string;
  primary: boolean;
  peerId: string;
  roles: string[];
  addrs: string[];
  peers: number;
  providersKnown: number;
  offersHeld: number;
}

type StatusOverlay = Omit<OverlayView, 'overlay' | 'primary'>;

/** The overlays of a /v1/status answer, the primary (the `network` section) first. */
export function overlaysOf(s: StatusOverlay & { overlay: string; overlays?: Record<string, StatusOverlay> }): OverlayView[] {
  const pick = (name: string, primary: boolean, o: StatusOverlay): OverlayView => ({ overlay: name, primary, peerId: o.peerId, roles: o.roles, addrs: o.addrs, peers: o.peers, providersKnown: o.providersKnown, offersHeld: o.offersHeld });
  return [pick(s.overlay, true, s), ...Object.entries(s.overlays ?? {}).map(([n, o]) => pick(n, false, o))];
}

export function register(program: Command): void {
  const overlay = program.command('overlay').description('private overlays: create a key, list the overlays the running node is on');

  overlay
    .command('create')
    .argument('<name>', 'overlay name (lower-case letters, digits, "-"; it appears in the gossip topics)')
    .option('--out <file>', 'where to write the key (default: <data-dir>/overlays/<name>.key)')
    .option('--json', 'machine-readable output')
    .description('write a new pre-shared key for a private overlay (mode 0600) and print the config to paste')
    .action(async (name: string, o: { out?: string; json?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      await checkOverlayName(name);
      const keyFile = resolve(o.out ?? join(dataDir, 'overlays', `${name}.key`));
      await writeSwarmKeyFile(keyFile);
      let hint = '/ip4/<host>/tcp/<port>/p2p/<peer id>';
      const [{ readKeyFileDid }, { peerIdFromDid }] = await Promise.all([import('../../node/identity.js'), import('../../node/peer-id.js')]);
      try {
        hint = `/ip4/<this host>/tcp/${SUGGESTED_PORT}/p2p/${peerIdFromDid(readKeyFileDid(dataDir)).toString()}`;
      } catch {
        /* no node key in this data directory yet: keep the generic form */
      }
      const snippets = configSnippets(name, keyFile, hint);
      if (o.json) return outJson({ overlay: name, keyFile, config: snippets });
      out(`wrote overlay key ${keyFile} (mode 0600)`);
      out('');
      out('Give this file, by a channel you trust, to every machine that should join; anyone holding it can connect.');
      out('To join the overlay beside the public network, add to config.yaml:');
      out('');
      out(snippets.beside);
      out('');
      out('or, for a node that is only on the overlay:');
      out('');
      out(snippets.only);
    });

  overlay
    .command('list')
    .description('the overlays the running node is on, with peers and providers known')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const c = requireDaemon(dataDir);
      const s = (await apiCall(c.api, c.token, 'GET', '/v1/status')) as Parameters<typeof overlaysOf>[0];
      const list = overlaysOf(s);
      if (o.json) return outJson({ overlays: list });
      out('overlay           peers  providers  offers  roles');
      for (const v of list) {
        out(`${(v.overlay + (v.primary ? ' *' : '')).padEnd(16)}  ${String(v.peers).padEnd(5)}  ${String(v.providersKnown).padEnd(9)}  ${String(v.offersHeld).padEnd(6)}  ${v.roles.join(', ') || '-'}`);
        for (const a of v.addrs) out(`    ${a}`);
      }
      out('(* the primary overlay: the one commands address unless told otherwise)');
    });
}
