/**
 * What `c0mpute init`, `start` and `run` run, and the offline node that `jobs`
 * and `reputation` open without a daemon (node.ts declares the commands):
 * loaded only when one of them runs, since they bring in the whole node.
 */
import { copyFileSync, existsSync, lstatSync, readFileSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { C0Error } from '../../errors.js';
import { bindDataDirIdentity, checkNewKeyFits, createIdentity, didFilePath, hasKeyFile, keyFilePath } from '../../node/identity.js';
import { checkRoleSections, layerSets, loadConfig, ROLE_NAMES, type ConfigWarning, type NodeConfig } from '../../node/config.js';
import { foreignDaemonNote, readDaemonInfo, type DaemonInfo } from '../../node/daemon-info.js';
import type { Daemon } from '../../node/daemon.js';
import { apiCall, apiStream, consoleLoginUrl } from '../../node/api-client.js';
import { ensureToken } from '../../node/api.js';
import { eventToWire, resultToWire, type WireEvent } from '../../node/events.js';
import { parseJobSpec } from '../../node/control.js';
import type { BuyerEvent, JobSpec } from '../../roles/buyer.js';
import { peerIdFromDid } from '../../node/peer-id.js';
import { createLogger } from '../../util/log.js';
import { checkWritable, EXIT, isBug, jsonReplacer, NegativeAnswer, out, Reported, UsageError, writeOutput } from '../context.js';
import { POLICIES } from '../../records/kinds.js';
import { passphraseFrom, warnUnencrypted } from '../passphrase.js';
import { loadNodeIdentity } from '../signer.js';
import { readJobFile } from '../jobfile.js';
import { outputNotWritten } from '../output-kept.js';
import { brokenOff, ctrlCAnswer, goesOnHere, watchCtrlC, type RunHeard } from '../run-interrupt.js';
import { renderEvent, short } from '../render.js';
import { runFailureLines } from '../../util/run-failure.js';
import { listLimit } from '../summary.js';
import { globals } from './index.js';
import { daemonClient, overlayQuery as q } from '../daemon-client.js';
import { errOf, exitOnBug } from '../../node/fatal.js';
import { divertErrors } from '../pipe.js';
import { writingDataFile } from '../../node/data-files.js';
import { writeFileAtomic } from '../../util/atomic-file.js';
import { makeDirs } from '../../util/make-dirs.js';

const here = dirname(fileURLToPath(import.meta.url));
/** config/default.yaml in the package (dist/src/cli/commands → ../../../../config). */
export const DEFAULT_CONFIG = join(here, '..', '..', '..', '..', 'config', 'default.yaml');

/** What `start` logs (DAEMON_PID_1) when it is process 1 of its pid namespace: a container run without an init. */
export const PID_1_WARNING =
  'this daemon is process 1 (a container started without an init): orphaned children of exec workloads will not be reaped, and a second SIGTERM will not kill a stop that hangs; run it under an init (`docker run --init`, tini, dumb-init) or systemd';

export interface StartFlags {
  config?: string;
  role?: string[];
  listen?: string[];
  bootstrap?: string[];
  api?: string;
  logLevel?: string;
  logFormat?: string;
  /** `start --new-identity`: this data directory goes on as the key's DID, not the one recorded (bindDataDirIdentity). */
  newIdentity?: boolean;
}

/** The key must be the one the data directory's data is from (identity.ts bindDataDirIdentity): KEY_MISMATCH, exit 3. */
function bindIdentity(dataDir: string, did: string, adopt = false): void {
  writingDataFile(didFilePath(dataDir), "the node's DID", () => bindDataDirIdentity(dataDir, did, adopt));
}

/**
 * The config the last `start` on a data directory that succeeded ran with: written once the node has started (a start
 * that fails leaves the record of the one before).
 */
export const START_RECORD = 'last-start.json';

/** What a start ran with: a config file (the data directory's config.yaml, or --config's), or the built-in defaults. */
export interface StartRecord {
  /** The config file's absolute path; null: the built-in defaults. */
  config: string | null;
  via: 'config.yaml' | '--config' | 'defaults';
  at: string;
  /**
   * Whether the file set nothing (empty, or comments only): the node ran on the defaults through it (CONFIG_EMPTY).
   * Absent in a record written before this field existed (before 0402f13): unknown, which refuses nothing.
   */
  empty?: boolean;
}

/**
 * The data directory's record of its last start, or null when there is none (a directory no start has used since this
 * record exists). A command reads it once (nodeConfig) and hands it to what needs it.
 */
export function readStartRecord(dataDir: string): StartRecord | null {
  try {
    const r = JSON.parse(readFileSync(join(dataDir, START_RECORD), 'utf8')) as Partial<StartRecord>;
    if ((typeof r.config === 'string' || r.config === null) && (r.via === 'config.yaml' || r.via === '--config' || r.via === 'defaults')) return { config: r.config, via: r.via, at: typeof r.at === 'string' ? r.at : '', ...(typeof r.empty === 'boolean' ? { empty: r.empty } : {}) };
  } catch {
    /* none, or unreadable: as none */
  }
  return null;
}

/**
 * Record which config this start ran with (`file`: what it was given; undefined: the defaults; `empty`: it set
 * nothing). A --config naming the data directory's own config.yaml is recorded as config.yaml: it is the way to go back
 * to that file on purpose after a start with another --config (dataDirConfig), and a plain `start` then takes it.
 */
export function writeStartRecord(dataDir: string, flagFile: string | undefined, file: string | undefined, empty = false): void {
  const own = file !== undefined && resolve(file) === resolve(join(dataDir, 'config.yaml'));
  const rec: StartRecord = { config: file === undefined ? null : resolve(file), via: file === undefined ? 'defaults' : flagFile !== undefined && !own ? '--config' : 'config.yaml', at: new Date().toISOString(), empty };
  const path = join(dataDir, START_RECORD);
  writingDataFile(path, 'the record of which config the node starts with', () => writeFileAtomic(path, JSON.stringify(rec) + '\n'));
}

/**
 * The data directory's config.yaml, or undefined (the built-in defaults) when there is none. Any entry by that name is
 * the config, read as such: a link to nothing (a mount not ready yet) or a directory is CONFIG_UNREADABLE, never the
 * defaults. For the daemon (`daemon`: `start`), a data directory whose last start ran with a config file that is not
 * given now (its config.yaml gone, or the --config it was started with left off) is CONFIG_MISSING: before (review s40
 * F3) a provider whose config was renamed came up as a buyer listening on every interface, with no warning. That holds
 * when a config.yaml is there too: a last start with `--config X` and none now is CONFIG_MISSING naming X, not
 * config.yaml (before, QA qaOps F1: `init` always writes one, so a unit that lost its --config brought a provider back
 * as a buyer on init's config, silently, and the record of X was overwritten); `--config <data-dir>/config.yaml`
 * switches to it on purpose (writeStartRecord then records it as config.yaml). One whose
 * last start ran on the defaults, a fresh one, and one only one-shot commands used start on the defaults; one with
 * db/ and no record of its last start (from before the record, or used only by `run`, `jobs`, `reputation`) does too,
 * with a warning (`warn`). `run`'s own node (a buyer on a port of its own) serves no one, and takes the defaults
 * there; the offline node of `jobs` and `reputation` takes what `start` would (displayConfigFile). `last`: the data
 * directory's start record, as the command read it (only the daemon's case reads it).
 */
export function dataDirConfig(dataDir: string, daemon = false, warn?: (message: string) => void, last: StartRecord | null = daemon ? readStartRecord(dataDir) : null): string | undefined {
  const file = join(dataDir, 'config.yaml');
  let present = true;
  try {
    lstatSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new C0Error('CONFIG_UNREADABLE', `cannot read config ${file}: ${(e as Error).message}`);
    present = false;
  }
  if (present) {
    if (daemon && last?.via === '--config' && last.config !== null && last.config !== resolve(file)) {
      const when = last.at ? ` (${last.at})` : '';
      throw new C0Error(
        'CONFIG_MISSING',
        `the last start on ${dataDir}${when} ran with --config ${last.config}, and this one has no --config: pass --config ${last.config} again; to run this node on ${file} from now on, start it once with --config ${file}`,
        { field: 'config', detail: { last: last.config, via: last.via, instead: resolve(file) } },
      );
    }
    return file;
  }
  if (!daemon) return undefined;
  const defaults = `to run this node on the built-in defaults (roles buyer, listening on every interface), write them there with \`c0mpute --data-dir ${dataDir} init\``;
  if (last && last.config !== null) {
    const when = last.at ? ` (${last.at})` : '';
    const how = last.via === '--config' ? `--config ${last.config}` : `its config.yaml`;
    const fix = last.via === '--config' ? `pass --config ${last.config} again` : `restore ${file} (or pass --config <file>)`;
    throw new C0Error('CONFIG_MISSING', `the last start on ${dataDir}${when} ran with ${how}, and this one has neither --config nor a config.yaml there: ${fix}; ${defaults}`, { field: 'config', detail: { last: last.config, via: last.via } });
  }
  if (!last && existsSync(join(dataDir, 'db'))) {
    warn?.(`${dataDir} holds a node's data (db/) but no config.yaml, and no record of which config its last start ran with: starting on the built-in defaults (roles buyer, listening on every interface); if this node ran with a config, stop it and restore ${file} (or pass --config <file>)`);
  }
  return undefined;
}

/**
 * The config file an offline display command (`jobs`, `reputation`, `market export` without a daemon: offlineNode)
 * reads: the one the node's last successful start ran with, so that what it shows is the daemon's view (whose buyers
 * count, reputation.trustedBuyers; what it keeps). That start's --config file when it had one, else the one a plain
 * `start` takes (dataDirConfig: config.yaml; CONFIG_MISSING when the last start ran with a config.yaml that is gone).
 * Before (review s41 rvB F3) these took config.yaml or the built-in defaults, whatever the daemon ran with: a node
 * started with a --config outside its data directory showed another reputation offline than it used, silently.
 *
 * When that --config file has moved, the command still shows what the node holds, from config.yaml (or the built-in
 * defaults when there is none), and `warn` hears that (CONFIG_MISSING), naming the way out. Before (review r2E S5)
 * it was refused CONFIG_MISSING with no way out: `jobs` and `reputation` take no --config. This is safe because the
 * display node lets nothing go (keepEverything: no bound evicts at open, no pruning) and runs no role; what may
 * differ is only what is shown (reputation counted with that config's trusted buyers, the overlays it names), which
 * the warning says. `last`: the data directory's start record (readStartRecord).
 */
export function displayConfigFile(dataDir: string, last: StartRecord | null, warn?: (message: string) => void): string | undefined {
  if (last?.via !== '--config' || last.config === null) return dataDirConfig(dataDir, true, undefined, last);
  try {
    lstatSync(last.config);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new C0Error('CONFIG_UNREADABLE', `cannot read config ${last.config}: ${(e as Error).message}`);
    const instead = dataDirConfig(dataDir);
    warn?.(
      `the last start on ${dataDir}${last.at ? ` (${last.at})` : ''} ran with --config ${last.config}, which is not there now: showing what the node holds read with ${instead ?? 'the built-in defaults'} instead (reputation counts that config's trusted buyers; its overlays). To read it with the node's own config again, start the node once with --config <where the file is now> (the record then names it), or restore the file there`,
    );
    return instead;
  }
  return last.config;
}

/**
 * A config file that sets nothing (empty, or comments only: the built-in defaults) where the last start ran with that
 * same file while it set something: refused as a missing one is (CONFIG_MISSING). Before (review s41 rvE F6) an
 * emptied config.yaml (a truncated copy, a failed edit) started a provider as a buyer listening on every interface,
 * with a CONFIG_EMPTY warning only, while a renamed one was refused. A file that set nothing at the last start too,
 * and a data directory whose record names another file (or none), keep the CONFIG_EMPTY warning; so does a record
 * that does not say (one written before the record had `empty`: review r2E S4, an upgraded node whose config.yaml had
 * been comments only all along was refused with a false "ran with it while it set something"). `last`: the data
 * directory's start record (readStartRecord).
 */
export function refuseEmptied(dataDir: string, file: string, viaFlag: boolean, last: StartRecord | null): void {
  if (!last || last.config === null || last.empty !== false) return;
  const same = last.via === 'config.yaml' ? !viaFlag && resolve(file) === resolve(join(dataDir, 'config.yaml')) : last.via === '--config' && resolve(file) === last.config;
  if (!same) return;
  const deliberately = last.via === 'config.yaml' ? `to run this node on the built-in defaults, write them there with \`c0mpute --data-dir ${dataDir} init --force-config\`` : `to run this node on the built-in defaults, start it without --config (or write them into that file: config/default.yaml)`;
  throw new C0Error(
    'CONFIG_MISSING',
    `${file} sets nothing (it is empty, or comments only), but the last start on ${dataDir}${last.at ? ` (${last.at})` : ''} ran with it while it set something: restore its content (from your backup); ${deliberately}`,
    { field: 'config', detail: { last: last.config, via: last.via, empty: true } },
  );
}

/** Which node a config is for: `start`'s daemon, an offline display command's node (offlineNode), or `run`'s own node. */
export type ConfigFor = 'start' | 'display' | 'oneshot';

/** What nodeConfig used: the config file (undefined: the built-in defaults), and whether it set nothing. */
export interface ConfigChosen {
  file: string | undefined;
  empty: boolean;
}

/**
 * The node's config from the flags, the config file and the environment. `chosen`, when given, is told which config
 * file was used; `warn` hears what dataDirConfig says. A value a flag gave that the config refuses is a wrong command
 * line (UsageError, exit 2, its own code: review s41 rvE, `--api nohost` was exit 3); from the file or the environment
 * it stays exit 3.
 */
export function nodeConfig(dataDir: string, f: StartFlags, warnings?: ConfigWarning[], mode: ConfigFor = 'oneshot', chosen?: (c: ConfigChosen) => void, warn?: (message: string) => void): NodeConfig {
  const flags: Record<string, unknown> = {};
  if (f.role?.length) {
    // a flag's value: exit 2 (UsageError), as the other flags' since session 41; the code stays CONFIG_INVALID
    for (const r of f.role) if (!(ROLE_NAMES as readonly string[]).includes(r)) throw new UsageError('CONFIG_INVALID', `unknown role "${r}" (--role); roles are ${ROLE_NAMES.join(', ')}`, { field: 'roles' });
    flags.roles = f.role;
  }
  const network: Record<string, unknown> = {};
  if (f.listen?.length) network.listen = f.listen;
  if (f.bootstrap?.length) network.bootstrap = f.bootstrap;
  if (Object.keys(network).length) flags.network = network;
  if (f.api !== undefined) flags.api = { listen: f.api };
  const log: Record<string, unknown> = {};
  if (f.logLevel !== undefined) log.level = f.logLevel;
  if (f.logFormat !== undefined) log.format = f.logFormat;
  if (Object.keys(log).length) flags.log = log;
  // after the flags' own checks: a wrong command line is said first. The start record is read once, here: only the
  // daemon and a display of what it ran with go by it (`run`'s own node takes config.yaml or the defaults)
  const last = mode === 'oneshot' ? null : readStartRecord(dataDir);
  const file = f.config ?? (mode === 'display' ? displayConfigFile(dataDir, last, warn) : dataDirConfig(dataDir, mode === 'start', warn, last));
  const said: ConfigWarning[] = [];
  let config: NodeConfig;
  try {
    config = loadConfig({ ...(file ? { file } : {}), env: process.env, flags, warnings: said });
  } catch (e) {
    if (e instanceof C0Error && e.code === 'CONFIG_INVALID' && e.field && layerSets(flags, e.field.split('.'))) {
      throw new UsageError(e.code, e.message, { field: e.field, ...(e.detail === undefined ? {} : { detail: e.detail }) });
    }
    throw e;
  }
  // a role's missing section (`--role provider` and no provider section) is said before the store opens and the
  // network starts, not ~7 s later from the role's setup (review s43 R6 F6)
  if (mode === 'start') checkRoleSections(config, file ?? 'config');
  const empty = said.some((w) => w.code === 'CONFIG_EMPTY');
  // the daemon, and a display of what it ran with: an emptied config is as a missing one
  if (file !== undefined && empty && mode !== 'oneshot') refuseEmptied(dataDir, file, f.config !== undefined, last);
  warnings?.push(...said);
  chosen?.({ file, empty });
  return config;
}

/** Start a node in this process for a one-shot command (no API, no daemon.json). */
async function oneShotNode(dataDir: string, flags: StartFlags, roles: NodeConfig['roles']): Promise<Daemon> {
  const warnings: ConfigWarning[] = [];
  const config = nodeConfig(dataDir, flags, warnings);
  // the roles are this command's, not the config's: only a misspelt variable is worth saying
  for (const w of warnings) if (w.code === 'CONFIG_ENV_UNKNOWN') process.stderr.write(`warning ${w.code}: ${w.message}\n`);
  config.roles = roles;
  // A one-shot node must not collide with a configured daemon port, and runs only the roles asked for on every overlay.
  const port0 = (addrs: string[]) => addrs.map((a) => a.replace(/\/tcp\/[0-9]+/, '/tcp/0'));
  if (!flags.listen?.length) config.network.listen = port0(config.network.listen);
  config.overlays = config.overlays.map((o) => ({ ...o, roles, listen: port0(o.listen) }));
  const log = createLogger({ level: flags.logLevel ?? (config.log.level === 'info' ? 'warn' : config.log.level), format: 'pretty', name: 'node' });
  const identity = await loadNodeIdentity(dataDir);
  bindIdentity(dataDir, identity.did);
  const { Daemon } = await import('../../node/daemon.js');
  // its peers are told it is one-shot (a new port each run, gone when the command ends): they do not remember it
  return Daemon.start({ dataDir, config, identity, log, advertise: false, api: false, oneShot: true });
}

async function waitForMarket(d: Daemon, ms: number, signal?: AbortSignal): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end && !signal?.aborted) {
    if (d.net.peers().length > 0 && d.market.adverts.latest.size > 0) {
      await new Promise((r) => setTimeout(r, 300));
      return;
    }
    // Every bootstrap address answers with another PeerId: waiting will not help (run's narration says why).
    const boot = d.net.connectivity().bootstrap;
    if (boot.length && boot.every((b) => b.lastError?.code === 'NET_PEER_ID_MISMATCH')) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface InitOpts {
  passphrase: boolean;
  forceConfig?: boolean;
}

/** `c0mpute init` */
export async function init(opts: InitOpts, cmd: Command): Promise<void> {
  const { dataDir } = globals(cmd);
  // not mkdirSync's recursive form, which never returns under /proc (src/util/make-dirs.ts)
  makeDirs(dataDir, { code: 'DATA_DIR_INVALID', field: 'dataDir', what: `cannot use ${dataDir} as the data directory`, mode: 0o700 });
  let id: ReturnType<typeof createIdentity> | undefined;
  if (!hasKeyFile(dataDir)) {
    // a data directory of another node gets no new key here (DATA_DIR_HAS_IDENTITY; `keys init --force` makes one)
    checkNewKeyFits(dataDir);
    const { pass, source } = opts.passphrase ? await passphraseFrom('passphrase for the new key (empty for none): ', true) : { pass: undefined, source: 'declined' as const };
    try {
      id = createIdentity(dataDir, pass);
    } catch (e) {
      // another `init` created it meanwhile (two on one volume): as if it had been there, theirs is kept
      if (!(e instanceof C0Error) || e.code !== 'KEY_EXISTS') throw e;
    }
    if (id) {
      out(`created key  ${id.did}`);
      out(`peer id      ${peerIdFromDid(id.did).toString()}`);
      out(`key file     ${id.keyFile} (${pass ? 'encrypted' : 'unencrypted'})`);
      if (!pass) warnUnencrypted(id.keyFile, source);
    }
  }
  if (!id) out(`key exists   ${keyFilePath(dataDir)}`);
  const cfg = join(dataDir, 'config.yaml');
  // any entry by that name is the config (a link to a mount not ready yet too: start says so), never written through
  const cfgExists = (() => {
    try {
      lstatSync(cfg);
      return true;
    } catch {
      return false;
    }
  })();
  if (!cfgExists || opts.forceConfig) {
    writingDataFile(cfg, 'the config', () => copyFileSync(DEFAULT_CONFIG, cfg));
    out(`wrote config ${cfg}`);
  } else out(`config exists ${cfg}`);
  out(`next: edit ${cfg}, then \`c0mpute start --data-dir ${dataDir}\``);
}

/**
 * The signals `start` stops cleanly on (docs/node.md "The daemon"): Ctrl-C, a service manager's stop, and the hangup a
 * foreground daemon gets when its terminal or ssh session goes away. Before (review s43 R6 F1), SIGHUP was not heard:
 * Node's default ended the process at once, leaving a running exec child orphaned, daemon.json and the store's holder
 * file behind, and the running job a non-delivery against this provider. A hangup is not a reload: the config is read
 * at start only, and a daemon whose terminal went away has no one left to read what it would say.
 */
const START_STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * A start that failed on what another start on the same data directory holds (its API port or p2p port, the
 * database) is DAEMON_RUNNING when that is what happened: two `start`s raced past the daemon.json check, and the
 * loser said API_LISTEN_FAILED, which sent the operator looking for a foreign program on the port (QA pass, session
 * 48). Told by the daemon.json written meanwhile, else by the database's holder note naming a live `start`.
 */
async function startedAlongside(e: unknown, dataDir: string): Promise<C0Error | undefined> {
  if (!(e instanceof C0Error) || !['API_LISTEN_FAILED', 'NET_LISTEN_FAILED', 'STORE_LOCKED'].includes(e.code)) return undefined;
  const running = readDaemonInfo(dataDir);
  if (running) return new C0Error('DAEMON_RUNNING', `a daemon (pid ${running.pid}) already runs on ${dataDir}: it started while this one was starting (this one's ${e.code})`);
  const holder = (await import('../../store/db.js')).dbHolder(join(dataDir, 'db'));
  if (holder?.cmd !== undefined && /(^|\s)start(\s|$)/.test(holder.cmd)) {
    return new C0Error('DAEMON_RUNNING', `another \`c0mpute start\` (pid ${holder.pid}) holds ${dataDir}: a daemon runs or is starting there (this one's ${e.code})`);
  }
  return undefined;
}

/** `c0mpute start` */
export async function start(f: StartFlags, cmd: Command): Promise<void> {
  const { dataDir } = globals(cmd);
  // a daemon.json another directory's daemon wrote (this one is a copy of that one) is not a daemon here: said below
  let foreign: (DaemonInfo & { dataDir: string }) | undefined;
  const running = readDaemonInfo(dataDir, (i) => (foreign = i));
  if (running) throw new C0Error('DAEMON_RUNNING', `a daemon (pid ${running.pid}) already runs on ${dataDir}`);
  const warnings: ConfigWarning[] = [];
  const notes: string[] = [];
  let used: ConfigChosen = { file: undefined, empty: false };
  const config = nodeConfig(dataDir, f, warnings, 'start', (c) => (used = c), (m) => notes.push(m));
  const log = createLogger({ level: config.log.level, format: config.log.format, name: 'c0mpute' });
  // what starts but is likely not what was meant: a misspelt C0MPUTE_* variable, a section no configured role reads
  for (const w of warnings) log.warn({ code: w.code, field: w.field }, w.message);
  for (const m of notes) log.warn({ code: 'CONFIG_DEFAULTS', field: 'config' }, m);
  if (foreign) log.warn({ code: 'DAEMON_INFO_FOREIGN', daemonDataDir: foreign.dataDir, pid: foreign.pid }, `${foreignDaemonNote(dataDir, foreign)}; starting this directory's own (it writes its own daemon.json)`);
  // A container's PID 1 with no init in front (docs/node.md "In a container"): Node reaps only the children it
  // started, so an exec workload's orphaned children stay zombies, and the kernel ignores a signal PID 1 has no
  // handler for, so the second SIGTERM that kills a stuck stop elsewhere does nothing here.
  if (process.pid === 1) log.warn({ code: 'DAEMON_PID_1' }, PID_1_WARNING);
  // A signal while the node starts (which can take a while: an index built after an upgrade) stops it as soon as it
  // has started, cleanly; the same signal again kills it (no handler is left for it).
  let signalled: string | undefined;
  let onSignal = (sig: string) => {
    signalled = sig;
    log.info({ sig }, 'stopping once started (the same signal again kills at once)');
  };
  const handlers = START_STOP_SIGNALS.map((sig) => [sig, () => onSignal(sig)] as const);
  for (const [sig, h] of handlers) process.once(sig, h);
  // C0MPUTE_FAILPOINT=<name>[,<name>]: tests only (docs/pools.md "Failure modes, tested"): the process kills itself
  // (SIGKILL, 137 to a shell) at that point, as a crash does: nothing of it runs after. Before, process.exit(137) ran
  // the native modules' exit hooks first (LevelDB closes its stores there), and once, on a loaded machine, the process
  // was still there 30 s later (CI of session 54)
  const failpoints = new Set((process.env.C0MPUTE_FAILPOINT ?? '').split(',').map((x) => x.trim()).filter(Boolean));
  const failpoint = (name: string) => {
    if (!failpoints.has(name)) return;
    log.error({ failpoint: name }, 'failpoint reached: killing this process at once (C0MPUTE_FAILPOINT)');
    process.kill(process.pid, 'SIGKILL');
  };
  // a bug (an exception nothing caught, a rejection nothing handled), during the start too, is logged as one fatal
  // line, then the node stops (once it has started) and the process exits 70
  let starting: Promise<Daemon> | undefined;
  exitOnBug({ proc: process, log, stop: async () => (await starting?.catch(() => undefined))?.stop() });
  let d: Daemon;
  try {
    const identity = await loadNodeIdentity(dataDir);
    // --new-identity: the new DID is recorded once the node has started, below (a start that fails leaves the old one)
    if (f.newIdentity !== true) bindIdentity(dataDir, identity.did);
    const { Daemon } = await import('../../node/daemon.js');
    starting = Daemon.start({ dataDir, config, identity, log, ...(failpoints.size ? { failpoint } : {}) });
    d = await starting;
    // Only a start that succeeded says what this data directory runs with: before (review s41 rvE F4) each start wrote
    // it first, so one that failed (its API port taken; another start holding the store) named its --config, and the
    // next correct start was refused CONFIG_MISSING. A later start without this config is CONFIG_MISSING (dataDirConfig).
    try {
      // tests only: a bug thrown once the node has started, before the start is recorded (the start's own bug path)
      if (failpoints.has('daemon.start-bug')) throw new Error('failpoint daemon.start-bug: a bug thrown by the start');
      if (f.newIdentity === true) bindIdentity(dataDir, identity.did, true);
      writeStartRecord(dataDir, f.config, used.file, used.empty);
    } catch (e) {
      await d.stop();
      throw e;
    }
  } catch (e) {
    // the start failed: a signal from now on does what it does by default
    for (const [sig, h] of handlers) process.removeListener(sig, h);
    const err = (await startedAlongside(e, dataDir)) ?? e;
    if (!isBug(err)) throw err;
    // a bug, as the daemon's fatal line in the log's own format (docs/node.md "The daemon"), not the CLI's free-text
    // `internal error` a JSON log pipeline cannot read; the node has been stopped (Daemon.start stops what it started)
    log.fatal({ kind: 'start', err: errOf(err) }, `the daemon hit a bug while starting: exiting ${EXIT.INTERNAL}`);
    throw new Reported(EXIT.INTERNAL, err);
  }
  const stopped = new Promise<void>((resolve) => {
    let stopping = false;
    onSignal = (sig: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ sig }, 'stopping');
      void d.stop().then(resolve, resolve);
    };
    if (signalled) onSignal(signalled);
  });
  if (signalled) return stopped; // no banner for a node already stopping
  // a banner (or any line to stdout) it cannot write is dropped, not the node's end (pipe.ts divertErrors)
  divertErrors(process.stdout, (e) => log.warn({ code: 'STDOUT_UNWRITABLE', err: e.code ?? e.message }, 'standard output cannot be written: the start banner is dropped; the node goes on (its log is on standard error)'));
  if (failpoints.has('daemon.bug')) process.once('SIGUSR2', () => void Promise.reject(new Error('failpoint daemon.bug: a rejection nothing handles')));
  out(`c0mpute node ${d.did}`);
  out(`  peer id  ${d.net.peerId.toString()}`);
  for (const a of d.net.addrs()) out(`  listen   ${a}`);
  out(`  roles    ${config.roles.join(', ')}   overlay ${config.network.overlay}   api http://${d.apiAddress}`);
  if (d.apiAddress && process.stdout.isTTY) {
    // asked of the node's own API, which a signal meanwhile closes: the stop is not held up for it
    const url = await Promise.race([consoleLoginUrl(d.apiAddress, ensureToken(dataDir)).catch(() => undefined), stopped.then(() => undefined)]);
    if (url) out(`  console  ${url}  (one-time login; \`c0mpute console\` prints another)`);
  } else if (d.apiAddress) {
    // No terminal (a supervisor's journal, a log file): a login code there would be a live 12-hour session for
    // whoever reads the log, which people without the 0600 api.token often can. Say where, mint nothing.
    out(`  console  http://${d.apiAddress}/ui/  (run \`c0mpute console\` for a login link)`);
  }
  await stopped;
}

export type RunFlags = StartFlags & { policy?: string; input?: string; output?: string; wait: string; json?: boolean; overlay?: string; limit?: string; all?: boolean; open?: boolean; designated?: string };

/** The start flags `run` takes, as typed: they configure the node `run` starts in its own process when no daemon runs. */
export const RUN_NODE_FLAGS: ReadonlyArray<[keyof StartFlags, string]> = [
  ['config', '--config'], ['role', '--role'], ['listen', '--listen'], ['bootstrap', '--bootstrap'], ['api', '--api'], ['logLevel', '--log-level'], ['logFormat', '--log-format'],
];

/**
 * With a daemon running, `run` hands the job to it, whose config is its own: a start flag would be silently ignored
 * (`--config other.yaml`, `--role provider`), so it is refused as a wrong command line (exit 2).
 */
export function refuseStartFlags(f: StartFlags): void {
  const given = RUN_NODE_FLAGS.filter(([k]) => f[k] !== undefined && !(Array.isArray(f[k]) && f[k].length === 0)).map(([, flag]) => flag);
  if (given.length === 0) return;
  throw new UsageError(
    'USAGE_NODE_FLAG_WITH_DAEMON',
    `${given.join(', ')} ${given.length === 1 ? 'applies' : 'apply'} only to the node \`run\` starts in its own process when no daemon runs; a daemon runs on this data directory and runs the job with its own config: drop ${given.length === 1 ? 'it' : 'them'} (or stop the daemon)`,
    { field: given[0]!.slice(2) },
  );
}

/** The running daemon's offer window (GET /v1/status `buyer.collectWindowMs`); undefined from a daemon before it, or a status that failed (the run itself says what is wrong). */
async function daemonWindow(client: { api: string; token: string }): Promise<number | undefined> {
  try {
    const w = ((await apiCall(client.api, client.token, 'GET', '/v1/status')) as { buyer?: { collectWindowMs?: unknown } }).buyer?.collectWindowMs;
    return typeof w === 'number' ? w : undefined;
  } catch {
    return undefined;
  }
}

/** This node's config for a run without a daemon, read once: the config, or why it does not read (thrown where the run needs it). */
function runConfig(dataDir: string, f: RunFlags): { config: NodeConfig } | { error: unknown } {
  try {
    return { config: nodeConfig(dataDir, f) };
  } catch (error) {
    return { error };
  }
}

/** `c0mpute run` */
export async function run(jobFile: string, f: RunFlags, cmd: Command): Promise<void> {
  const { dataDir } = globals(cmd);
  // a bad --policy is a wrong command line (exit 2); a bad policy in the job file stays a bad file (exit 3)
  if (f.policy !== undefined && !(POLICIES as readonly string[]).includes(f.policy)) throw new UsageError('POLICY_UNKNOWN', `--policy: unknown policy "${f.policy.slice(0, 40)}"; one of ${POLICIES.join(', ')}`, { field: 'policy' });
  if (f.designated !== undefined && !(await import('../../records/did.js')).isDid(f.designated)) {
    throw new UsageError('JOB_SPEC_INVALID', `--designated must be a provider DID (did:key:…), got "${String(f.designated).slice(0, 80)}"`, { field: 'designated' });
  }
  // an order any provider may claim, and one only this provider may: the two flags ask for different things (QA s49:
  // --open was dropped without a word and the order posted designated)
  if (f.open && f.designated !== undefined) throw new UsageError('JOB_ORDER_CONFLICT', '--open posts an order any provider may claim; --designated one only that provider may: give one of them', { field: 'open' });
  // The deadline is checked against the offer window of the buyer that runs the job (buyer.collectWindowMs): the running
  // daemon's (GET /v1/status `buyer`), else this node's config, read first; unknown (a daemon before it, a status that
  // fails, a config that does not read: said later, where it is read), the default window (QA ffBuyerDay2 F2)
  const client = daemonClient(dataDir);
  const offline = client ? undefined : runConfig(dataDir, f);
  const window = client ? await daemonWindow(client) : offline && 'config' in offline ? offline.config.buyer.collectWindowMs : undefined;
  const spec = readJobFile(jobFile, { ...(f.input ? { input: f.input } : {}), ...(f.policy ? { policy: f.policy } : {}), ...(f.open ? { open: true } : {}), ...(f.designated ? { designated: f.designated } : {}), ...(window !== undefined ? { collectWindowMs: window } : {}) });
  // An --output that cannot be written is refused before the job is bought, not after it is paid for.
  if (f.output) checkWritable(f.output);
  // events go to stderr (or stdout as JSON lines); what they said is not repeated by the final answer
  const said = new Set<string>();
  let verdictSaid = false;
  const limit = listLimit(f);
  if (!/^[0-9]{1,9}$/.test(f.wait)) throw new UsageError('CLI_BAD_WAIT', `--wait takes a whole number of milliseconds, got "${f.wait.slice(0, 40)}"`, { field: 'wait' });
  // the daemon is stopping (JOB_INTERRUPTED): said once, as the run's error, even when the stream breaks after the event
  let interrupted: { code: string; message: string } | undefined;
  const print = (ev: WireEvent) => {
    if (ev.e === 'interrupted') interrupted = { code: String(ev.code), message: String(ev.message) };
    if (f.json) return out(JSON.stringify(ev, jsonReplacer));
    if (ev.e === 'interrupted') return;
    if (ev.e === 'admission' && (ev.admission as { verdict?: string }).verdict !== 'Admit') verdictSaid = true;
    renderEvent(ev, short, (s) => {
      said.add(s);
      process.stderr.write(s + '\n');
    }, { limit });
  };
  let result: Record<string, unknown> | undefined;
  if (client) {
    refuseStartFlags(f);
    // Ctrl-C closes the stream: the daemon withdraws a job no provider was selected for yet, and lets one that was
    // run to its end (docs/node.md "A run whose client went away"); the line it ends with says which (run-interrupt.ts)
    const heard: RunHeard = {};
    const ctrlC = watchCtrlC();
    try {
      for await (const ev of apiStream(client.api, client.token, `/v1/run${q(f.overlay)}`, spec, { signal: ctrlC.signal })) {
        if (ev.e === 'result') result = ev.result as Record<string, unknown>;
        else if (ev.e === 'error') {
          const err = ev.error as { code: string; message: string };
          throw new C0Error(err.code, err.message);
        } else {
          if (ev.e === 'job') heard.job = (ev.job as { address?: string } | undefined)?.address;
          if (ev.e === 'selection') heard.winner = (ev.winner as { provider?: string } | undefined)?.provider;
          print(ev as WireEvent);
        }
      }
    } catch (e) {
      if (ctrlC.signal.aborted) throw ctrlCAnswer(heard, 'daemon', ctrlC.by());
      // the daemon said it broke the run off as it stopped, and then its stream ended before the result
      if (interrupted && (e as C0Error).code === 'DAEMON_STREAM_LOST') throw new C0Error(interrupted.code, interrupted.message);
      throw e;
    } finally {
      ctrlC.dispose();
    }
  } else {
    // What the run would refuse before publishing anything is said now, not after a node started and waited for a
    // market (the daemon's control API answers these at once too).
    const parsed = parseJobSpec(spec);
    if (!offline || 'error' in offline) throw offline?.error;
    await checkSpecOffline(parsed, offline.config, f.overlay);
    // Ctrl-C (docs/node.md "A run whose client went away"): the first withdraws a job no provider was selected for yet
    // (the run's client gone, as a daemon's is), or says that a selected one runs to its end here; a second stops the
    // node, which breaks the run off; a third exits at once. The node is stopped before the command ends. Listened
    // for from before the node starts: a Ctrl-C while it starts lets it finish starting, then ends the run cancelled
    // with nothing published (Node's own handling killed the process mid-start, with no word said).
    const heard: RunHeard = {};
    const gone = new AbortController();
    let presses = 0;
    let d: Awaited<ReturnType<typeof oneShotNode>> | undefined;
    const goesOn = () => process.stderr.write(goesOnHere(heard) + '\n');
    const onInt = () => {
      presses++;
      if (presses === 1) {
        gone.abort();
        if (heard.winner !== undefined) goesOn();
      } else if (presses === 2) void d?.stop();
      else process.exit(EXIT.INTERRUPTED);
    };
    process.on('SIGINT', onInt);
    try {
      d = await oneShotNode(dataDir, f, ['buyer']);
      // (returns at once after a Ctrl-C during the start)
      await waitForMarket(d, Number(f.wait), gone.signal);
      if (gone.signal.aborted) throw ctrlCAnswer(heard, 'here');
      const onEvent = (e: BuyerEvent) => {
        if (e.e === 'job') heard.job = e.job.address;
        if (e.e === 'selection' && heard.winner === undefined) {
          heard.winner = e.winner.provider;
          // the run committed as (or just after) the Ctrl-C came: it goes on, and says so now
          if (presses === 1) goesOn();
        }
        print(eventToWire(e));
      };
      const r = await d.overlay(f.overlay).runJob(parsed, onEvent, { gone: gone.signal });
      if (presses > 0 && r.status === 'interrupted') throw heard.winner === undefined ? ctrlCAnswer(heard, 'here') : brokenOff(heard);
      result = resultToWire(r);
    } finally {
      process.off('SIGINT', onInt);
      await d?.stop();
    }
  }
  if (!result) throw new C0Error('RUN_NO_RESULT', 'the daemon ended the run without a result');
  if (f.json) out(JSON.stringify({ e: 'result', result }, jsonReplacer));
  const status = result.status as string;
  if (status === 'interrupted') {
    // the node stopped under the run (an operator's doing, as a daemon that stopped while it answered): exit 3
    const err = (result.error as { code: string; message: string } | undefined) ?? interrupted ?? { code: 'JOB_INTERRUPTED', message: 'the run was broken off because the node is stopping' };
    throw new C0Error(err.code, err.message);
  }
  if (status === 'completed') {
    const output = Buffer.from(result.output as string, 'base64');
    if (f.output) {
      try {
        writeOutput(f.output, output);
      } catch (e) {
        // bought and accepted: the output is kept elsewhere, not dropped (QA ffBuyerDay2 F1)
        if (!(e instanceof C0Error) || e.code !== 'OUTPUT_UNWRITABLE') throw e;
        const job = (result.job as { address?: string } | undefined)?.address ?? 'job';
        const hash = (result.receipt as { record?: { outputHash?: string } } | undefined)?.record?.outputHash;
        throw outputNotWritten(e, output, job, hash, dataDir);
      }
      process.stderr.write(`▸ output (${output.length} bytes) written to ${f.output}\n`);
    } else if (!f.json) process.stdout.write(output.toString('utf8') + (output.at(-1) === 10 ? '' : '\n'));
    return;
  }
  const lines = runFailureLines(result, { verdictSaid, limit });
  // the final failure is an error message: stderr only, and once
  throw new NegativeAnswer(
    lines.filter((l) => !said.has(l)),
    'stderr',
  );
}


/** The checks Buyer.check makes, for the overlay the run would use, without a node (Buyer.checkSpec). */
async function checkSpecOffline(spec: JobSpec, config: NodeConfig, overlay: string | undefined): Promise<void> {
  const networks = [config.network, ...config.overlays];
  const network = overlay === undefined || overlay === '' ? config.network : networks.find((n) => n.overlay === overlay);
  if (!network) throw new C0Error('OVERLAY_NOT_FOUND', `this node is not on overlay "${overlay}"; it is on ${networks.map((n) => n.overlay).join(', ')}`, { field: 'overlay' });
  const { Buyer } = await import('../../roles/buyer.js');
  // open orders are taken on an overlay without a steward (src/node/buyer-wiring.ts); entitlements only on one with
  const stewarded = networks.filter((n) => n.steward).map((n) => n.overlay);
  Buyer.checkSpec(spec, { defaultPolicy: config.buyer.policy, orders: !network.steward, steward: !!network.steward, overlay: network.overlay, stewarded }, Date.now());
}

/**
 * A display command's node lets nothing go: the bounds that evict when the stores open (reputation evidence, adverts,
 * jobs quoted on, witness records) and the history pruning are lifted. A command that only shows what is held must
 * not change it (a config other than the daemon's, or one edited since, would have evicted evidence at open).
 */
export function keepEverything(config: NodeConfig): void {
  const all = Number.MAX_SAFE_INTEGER;
  config.reputation.maxEvidence = all;
  config.reputation.maxEvidenceBytes = all;
  config.market.maxAdverts = all;
  config.history.keepDays = 0; // no pruning (history-prune.ts)
  config.history.maxQuotedJobs = all;
  config.history.maxQuotedJobBytes = all;
  config.witnessRecords = { ...config.witnessRecords, maxEvidence: all, maxReceipts: all, maxWitnesses: all };
}

/**
 * Open the node's stores without networking (for offline jobs/reputation), with the config the daemon last ran with:
 * a display node (DaemonOptions.display) dials no one, lets no one in and recovers no earlier provider work. Until
 * session 48 it dialled the peers remembered in peers-<overlay>.json (took receipts off the network, left its own
 * passing address in the providers' memory) and, on a crashed provider's data directory, ended the leftover processes
 * and signed their failed receipts, silently, so the next start never said it had.
 */
export async function offlineNode(dataDir: string): Promise<Daemon> {
  const config = nodeConfig(dataDir, {}, undefined, 'display', undefined, (m) => process.stderr.write(`warning CONFIG_MISSING: ${m}\n`));
  keepEverything(config);
  config.roles = [];
  config.network.listen = ['/ip4/127.0.0.1/tcp/0'];
  config.network.bootstrap = [];
  config.overlays = config.overlays.map((o) => ({ ...o, roles: [], listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap: [] }));
  const log = createLogger({ level: 'silent' });
  const identity = await loadNodeIdentity(dataDir);
  bindIdentity(dataDir, identity.did);
  const { Daemon } = await import('../../node/daemon.js');
  const node = await Daemon.start({ dataDir, config, identity, log, advertise: false, api: false, display: true });
  // a directory a later build wrote (DATA_DIR_NEWER_FORMAT), or rolled back since: said as `start` says it
  for (const w of node.dataDirWarnings) process.stderr.write(`warning ${w.code}: ${w.message}\n`);
  return node;
}
