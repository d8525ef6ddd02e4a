/**
 * `c0mpute market probe job.yaml`: who would take this order now, and at what
 * price (spec/matching-and-leases.md "The market probe"; docs/matching.md
 * "Candidates and the probe"). Asks the running daemon (`POST /v1/probe`), or,
 * with `--records <dir>`, answers offline from presence and advert records
 * (no rotation: an offline probe marks nothing). No offer round, nothing signed.
 */
import type { Command } from 'commander';
import { apiCall } from '../../node/api-client.js';
import type { Presence } from '../../records/kinds.js';
import type { CandidatesResult } from '../../matching/candidates.js';
import { shortDid } from '../../market/short-did.js';
import { NegativeAnswer, out, outJson, UsageError } from '../context.js';
import { overlayQuery as q, requireDaemon } from '../daemon-client.js';
import { DEFAULT_LIST_LIMIT, listLimit } from '../limit.js';
import { globals } from './index.js';
import { parseAt } from './market.js';

interface ProbeOpts {
  input?: string;
  designated?: string;
  records?: string;
  at?: string;
  overlay?: string;
  json?: boolean;
  limit?: string;
  all?: boolean;
}

function pad(rows: string[][]): string[] {
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i]!))).join('  '));
}

/** The probe's answer for people: the ranked table, or why nobody (exit 1). */
export function probeLines(r: CandidatesResult & { picked?: string }, limit = DEFAULT_LIST_LIMIT): string[] {
  const lines = [`summary  ${r.summary}`];
  if (r.candidates.length) {
    const rows = [['rank', 'provider', 'ask', 'units', 'cost', 'free', 'held']];
    for (const c of r.candidates.slice(0, limit)) rows.push([String(c.rank), c.provider, `${c.ask.price.amount} ${c.ask.price.currency}/${c.ask.unit}`, String(c.units), `${c.cost.amount} ${c.cost.currency}`, String(c.freeSlots), String(c.held)]);
    lines.push('', ...pad(rows), '');
    if (r.candidates.length > limit) lines.push(`… and ${r.candidates.length - limit} more candidate(s) (--all lists every one)`);
    if (r.picked) lines.push(`picked   ${shortDid(r.picked)} (the rotation moves on to the next equally priced provider)`);
  }
  const shown = r.candidates.length ? [] : r.rejected.slice(0, limit);
  for (const p of shown) {
    lines.push(`not a candidate  ${p.provider}`);
    for (const x of p.reasons) lines.push(`    ${x.code}: ${x.message}`);
  }
  if (!r.candidates.length && r.rejected.length > shown.length) lines.push(`… and ${r.rejected.length - shown.length} more provider(s) (--all lists every one)`);
  return lines;
}

export function registerProbe(program: Command): void {
  const market = program.commands.find((c) => c.name() === 'market') ?? program.command('market').description('the market: offline selection, explanation and audit from record files');
  market
    .command('probe <job>')
    .description('every live provider that could take the order in job.yaml now, ranked with its ask (no offer round, nothing signed); exit 1 with why when none')
    .option('--input <file>', 'the input (its size counts for per-MiB prices; default the job file’s)')
    .option('--designated <did>', 'only this provider (a pinned probe: the rotation does not move)')
    .option('--records <dir>', 'offline: answer from presence and advert records in this directory instead of the running node')
    .option('--at <time>', 'with --records: as of this time (ms since the epoch or ISO date; default now)')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .option('--limit <n>', `list this many (default ${DEFAULT_LIST_LIMIT})`)
    .option('--all', 'list every one')
    .option('--json', 'machine-readable output')
    .action(async (file: string, o: ProbeOpts, cmd: Command) => {
      // a wrong --designated is a wrong command line (exit 2); the same in a request body stays PROBE_SPEC_INVALID
      if (o.designated !== undefined && !(await import('../../records/did.js')).isDid(o.designated)) {
        throw new UsageError('PROBE_SPEC_INVALID', `--designated must be a provider DID (did:key:…), got "${String(o.designated).slice(0, 80)}"`, { field: 'designated' });
      }
      const { readJobFile } = await import('../jobfile.js');
      const spec = readJobFile(file, { inputOptional: true, ...(o.input ? { input: o.input } : {}) });
      const body = { ...spec, ...(o.designated ? { designated: o.designated } : {}) };
      let r: CandidatesResult & { picked?: string };
      if (o.records) {
        const [{ T }, { candidates }, { liveFromRecords, parseProbeOrder }, { loadRecordDir }] = await Promise.all([
          import('../../records/kinds.js'),
          import('../../matching/candidates.js'),
          import('../../matching/probe.js'),
          import('./market-actions.js'),
        ]);
        const order = parseProbeOrder(body);
        const now = parseAt(o.at);
        const { records } = loadRecordDir(o.records);
        const live = liveFromRecords(records.ofType<Presence>(T.presence), records.adverts, now);
        r = candidates({ order, live, known: records.adverts, now });
      } else {
        const c = requireDaemon(globals(cmd).dataDir);
        r = (await apiCall(c.api, c.token, 'POST', `/v1/probe${q(o.overlay)}`, body)) as typeof r;
      }
      if (o.json) {
        outJson(r);
        if (!r.candidates.length) process.exitCode = 1;
        return;
      }
      const lines = probeLines(r, listLimit(o));
      if (!r.candidates.length) throw new NegativeAnswer(lines);
      for (const l of lines) out(l);
    });
}
