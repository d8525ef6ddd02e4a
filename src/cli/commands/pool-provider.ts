/**
 * `c0mpute pool-provider init|roster|join|leave|status` (docs/pools.md
 * "Operating a pool"; issue #13 "Operating it"):
 *   init    create the pool's key in its own folder (it signs rosters only and can stay offline)
 *   roster  sign a roster from a YAML members file (add or remove members: edit and sign again, seq + 1)
 *   join    this node countersigns its place on a roster (the membership file the `pool` config names);
 *           a running member adopts it at once and sends it to the others
 *   leave   this node signs that it has left the roster; a running member stops quoting and running
 *           work for the pool at once, withdraws its pooled advert and tells the others
 *   status  the running member's view: coordinator now and next epoch, liveness, jobs and earnings per member
 */
import type { Command } from 'commander';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../../errors.js';
import { apiCall } from '../../node/api-client.js';
import type { PoolRoster } from '../../records/kinds.js';
import { checkWritable, UsageError, out, outJson, readInput, writeOutput } from '../context.js';
import { short } from '../short.js';
import { offsetWords } from '../../pools/clock.js';
import { overlayQuery, requireDaemon } from '../daemon-client.js';
import { readDaemonInfo } from '../../node/daemon-info.js';
import { globals } from './index.js';

const DAY = 24 * 3600_000;
/** A roster's longest lifetime (MAX_ROSTER_LIFETIME_MS in src/records/kinds.ts, not imported here: the CLI's start stays light). */
const MAX_ROSTER_DAYS = 90;
/** The last roster `pool-provider roster` signed, kept in the pool's key folder (its seq bounds the next one's). */
export const LAST_ROSTER = 'last-roster.cose';

export function register(program: Command): void {
  const pp = program.command('pool-provider').description('a pooled provider: several machines that act as one provider (docs/pools.md)');
  pp.command('init')
    .description('create the pool’s key in <dir> (keep it offline; it signs rosters only)')
    .requiredOption('--pool-dir <dir>', 'folder for the pool’s key')
    .action(async (o: { poolDir: string }) => {
      const { createIdentity } = await import('../../node/identity.js');
      const id = createIdentity(o.poolDir);
      out(`pool ${id.did}`);
      out(`key  ${id.keyFile} (unencrypted: keep this folder offline)`);
    });
  pp.command('roster')
    .description('sign a roster from a YAML members file; re-run with the edited file to add or remove members (seq goes up)')
    .requiredOption('--pool-dir <dir>', 'the pool’s key folder')
    .requiredOption('--members <file>', 'YAML: members: [{did, weight, hardware: {cpuCores, memoryMiB, gpus?}}]')
    .requiredOption('--out <file>', 'where to write the roster envelope')
    .option('--epoch-ms <ms>', 'coordinator epoch length', '30000')
    .option('--lifetime-days <n>', 'validity (at most 90)', '30')
    .option('--seq <n>', 'sequence number, greater than any this pool signed here (default: the highest known, plus one)')
    .action(async (o: { poolDir: string; members: string; out: string; epochMs: string; lifetimeDays: string; seq?: string }) => {
      const [{ loadIdentity }, { open, seal }, { T }, { nextRosterSeq }] = await Promise.all([import('../../node/identity.js'), import('../../records/envelope.js'), import('../../records/kinds.js'), import('../../pools/roster-seq.js')]);
      // The options first, named as typed (before, `--epoch-ms abc` came out as RECORD_FIELD_TYPE on epochMs, exit 3).
      const epochMs = rosterEpochMs(o.epochMs);
      const lifetimeMs = rosterLifetimeMs(o.lifetimeDays);
      // a --seq that is no number is a bad option value (exit 2) before any file is read; one not newer than the pool's
      // last roster is found only after (nextRosterSeq: POOL_ROSTER_SEQ_NOT_NEWER, exit 3)
      if (o.seq !== undefined) {
        try {
          nextRosterSeq(o.seq, undefined);
        } catch (e) {
          throw e instanceof C0Error ? new UsageError(e.code, e.message, { field: 'seq' }) : e;
        }
      }
      let pool;
      try {
        pool = loadIdentity(o.poolDir);
      } catch (e) {
        // the pool's key is made by `pool-provider init`, not `keys init` (which makes a node's key)
        if (e instanceof C0Error && e.code === 'KEY_MISSING') throw new C0Error('KEY_MISSING', `no pool key in ${o.poolDir}: run \`c0mpute pool-provider init --pool-dir ${o.poolDir}\` first (or give the folder it was made in)`, { field: 'pool-dir' });
        throw e;
      }
      // The highest seq this pool is known here to have signed: the previous roster at --out (a directory there is
      // refused when writing), and the last one signed from this key folder (LAST_ROSTER), whatever its --out was.
      const last = join(o.poolDir, LAST_ROSTER);
      let known: { seq: number; where: string } | undefined;
      for (const [path, where] of [[o.out, `at ${o.out}`], [last, `last signed from ${o.poolDir} (${LAST_ROSTER})`]] as const) {
        if (!existsSync(path) || statSync(path).isDirectory()) continue;
        const r = open(readInput(path), T.poolRoster);
        if (r.signer === pool.did && r.record.seq > (known?.seq ?? -1)) known = { seq: r.record.seq, where };
      }
      const now = Date.now();
      const roster: PoolRoster = { seq: nextRosterSeq(o.seq, known), issuedAt: now, expiresAt: now + lifetimeMs, epochMs, members: await (await import('../members-file.js')).readMembers(o.members) };
      const env = seal(T.poolRoster, roster, pool.signer);
      writeOutput(o.out, env.bytes);
      // Kept beside the key: the next roster is checked against it wherever it is written. The roster is written
      // already: a key folder that cannot take it is said, not an error.
      try {
        writeOutput(last, env.bytes);
      } catch (e) {
        process.stderr.write(`warning: could not keep the roster in ${last} (${(e as Error).message}): the next roster's seq is checked only against its --out\n`);
      }
      out(`roster ${env.address} seq ${roster.seq} of pool ${pool.did}: ${roster.members.length} members`);
    });
  for (const [name, status] of [['join', 'member'], ['leave', 'left']] as const) {
    pp.command(name)
      .description(status === 'member' ? 'countersign this node’s place on a roster (the file `pool.membership` names)' : 'sign that this node has left the roster (its records for it are refused from then on)')
      .requiredOption('--roster <file>', 'the roster envelope')
      .requiredOption('--out <file>', 'where to write the membership envelope')
      .option('--overlay <name>', 'overlay of the running member (default: the node’s first)')
      .option('--no-push', 'only write the file: do not hand it to the running member')
      .action(async (o: { roster: string; out: string; overlay?: string; push?: boolean }, cmd: Command) => {
        const { dataDir } = globals(cmd);
        const [{ readKeyFileDid }, { open, seal }, { T }, { loadNodeIdentity }] = await Promise.all([import('../../node/identity.js'), import('../../records/envelope.js'), import('../../records/kinds.js'), import('../signer.js')]);
        const roster = open(readInput(o.roster), T.poolRoster);
        const did = readKeyFileDid(dataDir);
        if (!roster.record.members.some((m) => m.did === did)) throw new C0Error('POOL_NOT_MEMBER', `${did} is not on roster ${roster.address}`);
        // An expired roster stands for nothing (buyers refuse its adverts): joining it would stop the pool (docs/pools.md "Roster expiry").
        if (status === 'member' && Date.now() >= roster.record.expiresAt) throw (await import('../../roles/pool-member/roster-state.js')).rosterExpired(roster, Date.now());
        const id = await loadNodeIdentity(dataDir);
        const env = seal(T.poolMembership, { pool: roster.signer, roster: roster.address, seq: roster.record.seq, status, signedAt: Date.now() }, id.signer);
        const done = `${status === 'member' ? 'joined' : 'left'} pool ${roster.signer} (roster seq ${roster.record.seq}) as ${did}`;
        // A running member acts on the new roster at once (docs/pools.md "A new roster reaches running members").
        // Leaving reaches it the same way ("A member leaves a running pool"). It is asked first: the file is written
        // only once it accepted (a refused roster, stale or of another pool, left the file replaced, and the member
        // then could not restart on it).
        const running = readDaemonInfo(dataDir);
        if (running && o.push !== false) {
          checkWritable(o.out);
          const c = requireDaemon(dataDir);
          // the member tells the others before it answers (each call bounded by its pool liveness, 2 s by default)
          const r = (await apiCall(c.api, c.token, 'POST', `/v1/pool/roster${overlayQuery(o.overlay)}`, { roster: Buffer.from(roster.bytes).toString('base64'), membership: Buffer.from(env.bytes).toString('base64') }, { workMs: 30_000 })) as { seq: number; members: string[] };
          try {
            writeOutput(o.out, env.bytes);
          } catch (e) {
            const ce = e instanceof C0Error ? e : new C0Error('OUTPUT_UNWRITABLE', (e as Error).message, { field: 'out' });
            throw new C0Error(ce.code, `${ce.message}; the running member already acts on roster seq ${r.seq} and keeps it in its database (a restart uses it): write the membership again with --no-push`, { field: 'out' });
          }
          out(done);
          out(status === 'member' ? `the running member now uses roster seq ${r.seq} (${r.members.length} members) and sent it to the others` : `the running member left the pool at once: no more quotes or work for it, advert withdrawn, the others told`);
          return;
        }
        // No running member to ask: the membership already at --out is what the node starts on; one of another pool or
        // of a newer roster is not replaced (the node could not start on the pair, or would go back a roster).
        await keptMembership(o.out, roster.signer, roster.record.seq, did);
        writeOutput(o.out, env.bytes);
        out(done);
      });
  }
  pp.command('status')
    .description('the elected coordinator now and next epoch, each member’s liveness, jobs and earnings (from the running member)')
    .option('--overlay <name>', 'overlay (default: the node’s first)')
    .option('--json', 'machine-readable output')
    .action(async (o: { overlay?: string; json?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const c = requireDaemon(dataDir);
      const s = (await apiCall(c.api, c.token, 'GET', `/v1/pool${overlayQuery(o.overlay)}`)) as {
        pool: string;
        me?: string;
        epoch: number;
        coordinator?: string;
        nextCoordinator?: string;
        roster: { seq: number; expiresAt?: number };
        newestSeq?: number;
        quoting?: boolean;
        notQuoting?: string;
        removed?: boolean;
        left?: boolean;
        pending?: number;
        disputed?: number;
        keepDays?: number;
        members: Array<{ did: string; weight?: number; offRoster?: boolean; live: boolean; left?: boolean; clock?: MemberClock; jobs: { dispatched: number; completed: number; failed: number }; earned: Record<string, string> }>;
        clock?: { windowMs: number; split?: boolean };
      };
      if (o.json) return outJson(s);
      out(`pool ${s.pool} roster seq ${s.roster.seq} epoch ${s.epoch}`);
      // a member the pool removed hears no election it takes part in: none, rather than a name it cannot vouch for
      if (s.coordinator !== undefined || !s.removed) out(`coordinator ${short(s.coordinator)} (next epoch ${short(s.nextCoordinator)})`);
      else out('coordinator: none heard (this member, removed, takes no part in the election, and hears no live member of the roster it holds)');
      if (s.roster.expiresAt !== undefined) {
        const at = new Date(s.roster.expiresAt).toISOString();
        if (s.notQuoting === 'expired') out(`roster seq ${s.roster.seq} EXPIRED at ${at}: buyers refuse the pool's adverts, no member quotes; sign a renewed roster (pool-provider roster) and join it`);
        else out(`roster expires ${at}`);
      }
      if (s.left) out('this member has left the pool: it no longer quotes or runs work for it');
      else if (s.removed) out(`removed by roster seq ${s.newestSeq}: this member no longer quotes for the pool`);
      else if (s.newestSeq !== undefined && s.newestSeq > s.roster.seq) out(`roster seq ${s.newestSeq} exists: join it (pool-provider join) to quote again`);
      if (s.pending) out(`dispatches pending in the trail: ${s.pending}`);
      if (s.disputed) out(`jobs completed under two coordinators' dispatches (one did not do the work; no settlement of them counts): ${s.disputed}`);
      if (s.keepDays) out(`jobs and earnings of the trail kept: jobs up to ${s.keepDays} days past their deadline (history.keepDays)`);
      for (const line of clockLines(s)) out(line);
      for (const m of s.members) {
        const earned = Object.entries(m.earned).map(([cur, a]) => `${a} ${cur}`).join(', ') || '0';
        out(`  ${short(m.did)} ${m.offRoster ? 'not on this roster (left or removed)' : `w${m.weight} ${m.left ? 'left' : m.live ? 'live' : 'gone'}${m.clock?.skewed ? ', clock skewed' : ''}`}  jobs ${m.jobs.completed}/${m.jobs.dispatched} ok, ${m.jobs.failed} failed  earned ${earned}`);
      }
    });
}

/** A member's clock in `/v1/pool` (docs/pools.md "Clocks and the election"): its offset from the pool's, and whether that is beyond the window. */
export interface MemberClock {
  offsetMs: number;
  skewed?: boolean;
}

/**
 * What `pool-provider status` says of the members' clocks (docs/pools.md "Clocks and the election"): a line for each
 * member left out of the election for its clock, with its offset from the pool's, and one when the electable members'
 * clocks disagree beyond the window with nobody to single out; nothing when the clocks agree (or a daemon before it).
 */
export function clockLines(s: { me?: string; members: ReadonlyArray<{ did: string; clock?: MemberClock }>; clock?: { windowMs: number; split?: boolean } }): string[] {
  const w = s.clock?.windowMs;
  const within = w === undefined ? '' : ` (buyers allow ${w / 1000} s)`;
  const lines = s.members
    .filter((m) => m.clock?.skewed)
    .map((m) => `⚠ clock of ${short(m.did)}${m.did === s.me ? ' (this member)' : ''} is ${offsetWords(m.clock!.offsetMs)} the pool's${within}: it is not elected coordinator; fix its clock (NTP) [POOL_MEMBER_CLOCK_SKEWED]`);
  if (s.clock?.split) {
    const offs = s.members.filter((m) => m.clock).map((m) => `${short(m.did)} ${m.clock!.offsetMs >= 0 ? '+' : '-'}${(Math.abs(m.clock!.offsetMs) / 1000).toFixed(1)} s`);
    lines.push(`⚠ the members' clocks disagree beyond what buyers allow${within} and no majority agrees (${offs.join(', ')}): buyers drop the offers of a coordinator whose clock is off theirs; fix the members' clocks (NTP) [POOL_CLOCKS_SPLIT]`);
  }
  return lines;
}

/**
 * Before `join`/`leave` without a running member writes `out`: a membership this node signed already there, of
 * another pool (POOL_WRONG_POOL) or of a newer roster (POOL_ROSTER_STALE), is not replaced. Anything else there (no
 * file, another signer's, not a membership) is left to the write.
 */
async function keptMembership(path: string, pool: string, seq: number, did: string): Promise<void> {
  if (!existsSync(path) || statSync(path).isDirectory()) return;
  const [{ open }, { T }] = await Promise.all([import('../../records/envelope.js'), import('../../records/kinds.js')]);
  let m;
  try {
    m = open(readInput(path), T.poolMembership);
  } catch {
    return;
  }
  if (m.signer !== did) return;
  const keep = 'nothing written: give another --out, or move that file away first';
  if (m.record.pool !== pool) throw new C0Error('POOL_WRONG_POOL', `${path} holds this node's membership of pool ${m.record.pool}, not ${pool} (${keep})`, { field: 'roster' });
  if (m.record.seq > seq) throw new C0Error('POOL_ROSTER_STALE', `${path} holds this node's membership of roster seq ${m.record.seq}, newer than seq ${seq} (${keep})`, { field: 'roster' });
}

/** `roster --epoch-ms`: a whole number of ms from 1000 to a day (the roster's bounds), else POOL_ROSTER_EPOCH_INVALID (exit 2). */
export function rosterEpochMs(v: string): number {
  const n = /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < 1000 || n > DAY) throw new UsageError('POOL_ROSTER_EPOCH_INVALID', `--epoch-ms ${JSON.stringify(v.slice(0, 40))} is not a whole number of milliseconds from 1000 to ${DAY} (a day)`, { field: 'epoch-ms' });
  return n;
}

/** `roster --lifetime-days`: a number of days above 0, at most 90 (the roster's bound), as whole ms; else POOL_ROSTER_LIFETIME_INVALID (exit 2). */
export function rosterLifetimeMs(v: string): number {
  const days = /^\s*(\d+(\.\d*)?|\.\d+)\s*$/.test(v) ? Number(v) : NaN;
  const ms = Math.round(days * DAY);
  if (!Number.isFinite(days) || ms < 1 || days > MAX_ROSTER_DAYS) throw new UsageError('POOL_ROSTER_LIFETIME_INVALID', `--lifetime-days ${JSON.stringify(v.slice(0, 40))} is not a number of days above 0, at most ${MAX_ROSTER_DAYS}`, { field: 'lifetime-days' });
  return ms;
}
