/** Small formatting helpers the views and the pure modules share (ui/lib.ts re-exports them). Free of the DOM. */
import { ApiError } from './api.js';
export { plural } from '../src/util/text.js';
import { printable } from '../src/util/text.js';

export function ago(t: number | undefined, now = Date.now()): string {
  if (!t) return '—';
  const s = Math.round((now - t) / 1000);
  if (s < 0) return `in ${fmtDuration(-s * 1000)}`;
  return `${fmtDuration(s * 1000)} ago`;
}

export function fmtDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 90) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = s / 60;
  if (m < 90) return `${m.toFixed(0)} min`;
  return `${(m / 60).toFixed(1)} h`;
}


/** A time as a date and a time of day, local, ISO-like: `2026-12-07 01:53:02` (QA s49: the deadline was a time of day alone). */
export function dateTime(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/**
 * Is this field of a decoded record a time (epoch milliseconds: `startedAt`, `completedAt`, `deadline`, `announcedAt`
 * …)? The Record page then shows it as a date and time beside the number (QA s49: raw epoch ms only).
 */
export function isTimeField(key: string, v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1e12 && v < 1e14 && (/At$/.test(key) || key === 'deadline' || key === 'expires' || key === 'notAfter' || key === 'notBefore');
}

/** A time with how long ago or how far ahead it is: `2026-12-07 01:53:02 (15 s ago)`. */
export function whenText(ms: number, now = Date.now()): string {
  return `${dateTime(ms)} (${ago(ms, now)})`;
}

/**
 * The form's energy estimate in µJ: a number of joules, checked here (FORM_ENERGY_INVALID), since NaN went to the
 * daemon as null and came back as "energy.uj: Invalid input: expected number, received null".
 */
export function energyUj(text: string): number {
  const t = text.trim();
  const j = /^[0-9]+(\.[0-9]+)?$/.test(t) ? Number(t) : Number.NaN;
  const uj = Math.round(j * 1e6);
  if (!Number.isSafeInteger(uj)) throw new ApiError('FORM_ENERGY_INVALID', `Energy estimate: expected a number of joules (e.g. 1000 or 2.5), got "${t.slice(0, 40)}"`, 0);
  return uj;
}

/** What each cause of a failed handshake means (src/net/refusals.ts handshakeFailure); only `garbled` is a wrong swarm key's doing. */
const HANDSHAKE_CAUSES: Record<string, { text: string; warn: boolean }> = {
  garbled: { text: 'garbled: a wrong swarm key?', warn: true },
  timeout: { text: 'not finished in time: a slow or paused peer, or this node was paused', warn: false },
  gone: { text: 'the peer went away mid-handshake: harmless (a restart, a dial that gave up, a port scan)', warn: false },
  other: { text: 'failed otherwise: the node’s log says how', warn: true },
};

/**
 * The refused connections as the Overview and the Overlays view say them, one phrase a reason (`warn`: one an operator
 * should look into), the failed handshakes by cause (GET /v1/console/overview `handshakes`). QA qaCon F2: a peer that
 * went away mid-handshake on a routine restart read "1 (failed handshake, e.g. wrong swarm key)", which the node's log
 * had classed as harmless (`cause: gone`).
 */
export function refusedPhrases(refused: Record<string, number>, handshakes: Record<string, number> | undefined): Array<{ text: string; warn: boolean }> {
  const out: Array<{ text: string; warn: boolean }> = [];
  for (const [reason, n] of Object.entries(refused)) {
    if (reason === 'handshake') {
      const causes = Object.entries(handshakes ?? {}).filter(([, c]) => c > 0);
      // a daemon from before the causes were counted: the number alone, and where to look
      if (!causes.length) out.push({ text: `${n} failed ${n === 1 ? 'handshake' : 'handshakes'} (the node’s log says why)`, warn: false });
      for (const [cause, c] of causes) {
        const m = HANDSHAKE_CAUSES[cause] ?? HANDSHAKE_CAUSES.other!;
        out.push({ text: `${c} failed ${c === 1 ? 'handshake' : 'handshakes'}, ${m.text}`, warn: m.warn });
      }
    } else if (reason === 'allowlist') out.push({ text: `${n} not on the allowlist: ${n === 1 ? 'it holds' : 'they hold'} the swarm key (has it leaked?)`, warn: true });
    else if (reason === 'banned') out.push({ text: `${n} from ${n === 1 ? 'a peer' : 'peers'} banned for flooding`, warn: false });
    else out.push({ text: `${n} ${reason}`, warn: false });
  }
  return out;
}

/**
 * A provider's receipt's run time, as the "Took" column and a job's receipt say it. A receipt signed for work a crash
 * orphaned (EXEC_PROVIDER_CRASHED) is signed at the provider's restart: started → signed is its downtime, not how long
 * the work ran (docs/node.md "Orphaned work after a crash"), so it is said as such (QA qaCon F6: "79 s" for ~8 s of work).
 */
export function tookText(r: { startedAt: number; completedAt: number; failure?: string | undefined }): string {
  if (r.failure === 'EXEC_PROVIDER_CRASHED') return `crashed; signed at restart, ${fmtDuration(r.completedAt - r.startedAt)} after it started`;
  return fmtDuration(r.completedAt - r.startedAt);
}

/**
 * The daemon's "This job has ended: its deadline passed at 2026-12-07T10:29:13.127Z …" (GET /v1/offers `ended`, the
 * same text `c0mpute offers` prints) with its time in the console's one format, `2026-12-07 10:29:13 (4 min ago)`
 * (dateTime: local, ISO-like; QA qaCon F8 found three formats on one page).
 */
export function endedSummary(summary: string, ended: { at: number } | undefined, now = Date.now()): string {
  if (!ended) return summary;
  return summary.replace(new Date(ended.at).toISOString(), whenText(ended.at, now));
}

/**
 * An error's message as the CLI prints it (`error CODE: …`, src/cli/program.ts): its line breaks kept, every other
 * control and bidirectional character escaped as a peer's text is. QA ffConsole F5: the console escaped the breaks
 * too, and a job file that is not YAML read `… at line 2, column 1:\u000a\u000aworkload: [\u000a\u000a^`.
 */
export function errorText(message: string): string {
  return printable(message, true);
}
