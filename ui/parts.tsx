/** Small pieces every view uses: status words with symbols (never colour alone), record links, bars, sparklines, errors. */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { peer, shortAddr, shortDid, overlayQuery, useFeedState, type ApiError } from './lib.js';
import { verdictWord } from '../src/util/acceptance-text.js';
import { errorText, refusedPhrases } from './format.js';

const GOOD = new Set(['complete', 'completed', 'accepted', 'ok', 'live', 'eligible', 'Admit', 'connected']);
const BAD = new Set(['failed', 'disputed', 'no-offers', 'no-eligible-provider', 'denied', 'queue-expired', 'preempted', 'interrupted', 'expired', 'error', 'refused', 'ineligible', 'self-attested', 'contradicted', 'non-delivery', 'unclaimed', 'no provider selected']);

/** Done, and neither good nor bad: a buyer's acknowledgement of a failed receipt (util/acceptance-text.ts). */
const NEUTRAL = new Set(['acknowledged', 'announced']);

/** Not a failure, but to be looked at: a ledger only partly witnessed (its tail self-attested). Never a good mark. */
const WARN = new Set(['partly witnessed']);

/** A status as a word with a symbol; colour only repeats what the word says. */
export function Status({ s }: { s: string | undefined }) {
  if (!s) return <span class="st st-none">— none</span>;
  const kind = GOOD.has(s) ? 'good' : BAD.has(s) ? 'bad' : NEUTRAL.has(s) ? 'neutral' : WARN.has(s) ? 'warn' : 'mid';
  const sym = kind === 'good' ? '✓' : kind === 'bad' ? '✗' : kind === 'neutral' ? '•' : kind === 'warn' ? '⚠' : '…';
  return (
    <span class={`st st-${kind}`}>
      <span aria-hidden="true">{sym}</span> {s}
    </span>
  );
}

/** A buyer's verdict on a receipt of `receiptStatus`: `acknowledged` for a failed receipt it accepted (the record says `accepted`). */
export function Verdict({ v, receiptStatus }: { v: string | undefined; receiptStatus: string | undefined }) {
  return <Status s={v === undefined ? undefined : verdictWord(v, receiptStatus)} />;
}

export function AddrLink({ a, overlay }: { a: string | undefined; overlay?: string | undefined }) {
  if (!a) return <span>—</span>;
  return (
    <a class="addr" href={`#/record/${encodeURIComponent(a)}${overlay ? `/${encodeURIComponent(overlay)}` : ''}`} title={a}>
      <code>{shortAddr(a)}</code>
    </a>
  );
}

/** A DID's short form, the full DID in its title; text that is not a DID is drawn escaped (`peer`), never as a short form. */
export function Did({ d, names }: { d: string | undefined; names?: Map<string, string> }) {
  if (!d) return <span>—</span>;
  const n = names?.get(d);
  return (
    <code class="did" title={peer(d)}>
      {n ? `${n} ` : ''}
      {shortDid(d)}
    </code>
  );
}

/** How long a view waits for the node before it says the node has not answered (the header's "not answering" waits twice the stream's ping). */
export const SLOW_ANSWER_MS = 10_000;

/**
 * A view waiting for its data; after SLOW_ANSWER_MS, or at once while the live feed finds the node silent, it says
 * the node is not answering and that the view loads once it does (QA qaCon F7: "Loading reputation…" for as long as a
 * SIGSTOPped daemon stayed stopped). The request is not given up: a node that resumes answers it.
 */
export function Loading({ what }: { what: string }) {
  const feed = useFeedState();
  const [slow, setSlow] = useState(false);
  useEffect(() => {
    const t = window.setTimeout(() => setSlow(true), SLOW_ANSWER_MS);
    return () => clearTimeout(t);
  }, []);
  const note = feed === 'stale' ? 'the node is not answering (the live feed is reconnecting); this view loads once it answers' : slow ? `the node has not answered for ${SLOW_ANSWER_MS / 1000} s: it may be stalled or very busy; this view loads once it answers` : undefined;
  return (
    <p class={note ? 'loading error' : 'loading'} role="status">
      Loading {what}…{note ? ` ${note}` : ''}
    </p>
  );
}

export function ErrorBox({ error }: { error: ApiError | undefined }) {
  if (!error) return null;
  return (
    <div class="error" role="alert">
      <strong>{error.code}</strong>: <span class="msg">{errorText(error.message)}</span>
    </div>
  );
}

/**
 * A table in a box of its own that scrolls sideways when its columns do not fit (a phone), focusable so a keyboard
 * scrolls it too. Its cells break lines between words only (style.css): before, a phone's tables were squeezed to the
 * window, letter by letter ("Atte / mpts", "com / ple / ted", a score "0. / 97 / 1"), and the steward's tree made the
 * Overlays page wider than the window (QA ffConsole F2).
 */
export function TableBox({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div class="scroll-x" tabIndex={0} role="region" aria-label={label}>
      {children}
    </div>
  );
}

export function Section({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section aria-labelledby={id ?? slug(title)}>
      <h2 id={id ?? slug(title)}>{title}</h2>
      {children}
    </section>
  );
}

export function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-');
}

/**
 * A horizontal bar of segments against a scale; each segment has a pattern as
 * well as a colour, and the figures are written beside it.
 */
export function Bar({ label, scale, parts, mark }: { label: string; scale: number; parts: Array<{ name: string; value: number; cls: string }>; mark?: { name: string; value: number } }) {
  const pct = (v: number) => `${Math.max(0, Math.min(100, (v / (scale || 1)) * 100)).toFixed(2)}%`;
  let left = 0;
  const text = parts.map((p) => `${p.name} ${p.value}`).join(', ');
  return (
    <div class="bar" role="img" aria-label={`${label}: ${text}${mark ? `; ${mark.name} ${mark.value}` : ''}`}>
      {parts.map((p) => {
        const el = <span key={p.name} class={`seg ${p.cls}`} style={{ left: pct(left), width: pct(p.value) }} />;
        left += p.value;
        return el;
      })}
      {mark ? <span class="mark" style={{ left: pct(mark.value) }} /> : null}
    </div>
  );
}

/** A tiny line chart of recent values (the overview's health). */
export function Spark({ values, label }: { values: number[]; label: string }) {
  const w = 120;
  const h = 28;
  const max = Math.max(1, ...values);
  const pts = values.map((v, i) => `${((i / Math.max(1, values.length - 1)) * w).toFixed(1)},${(h - (v / max) * (h - 2) - 1).toFixed(1)}`).join(' ');
  return (
    <svg class="spark" width={w} height={h} viewBox={`0 0 ${w} ${h}`} role="img" aria-label={`${label}: last ${values.at(-1) ?? 0}, peak ${max}`}>
      <polyline points={pts} fill="none" stroke="currentColor" stroke-width="1.5" />
    </svg>
  );
}

/** The ?overlay= picker shared by views that address one overlay. */
export function OverlayPicker({ overlays, value, onChange }: { overlays: string[]; value: string | undefined; onChange: (o: string | undefined) => void }) {
  if (overlays.length < 2) return null;
  return (
    <label class="inline">
      Overlay{' '}
      <select value={value ?? ''} onChange={(e) => onChange((e.target as HTMLSelectElement).value || undefined)}>
        {overlays.map((o, i) => (
          <option key={o} value={i === 0 ? '' : o}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
}

export { overlayQuery };

/**
 * Previous / Next over a keyset-paged list (the Market and Reputation views): `afters` is the trail of cursors walked so
 * far (empty on the first page), `next` the page's cursor to the one after (undefined on the last); `go` takes the new trail.
 */
export function Pager({ label, size, afters, next, go }: { label: string; size: number; afters: readonly string[]; next: string | undefined; go: (afters: string[]) => void }) {
  const after = afters.at(-1);
  return (
    <nav class="pager" aria-label={label}>
      <button type="button" disabled={afters.length === 0} onClick={() => go(afters.slice(0, -1))}>
        Previous {size}
      </button>{' '}
      <button type="button" disabled={next === undefined} onClick={() => next !== undefined && next !== after && go([...afters, next])}>
        Next {size}
      </button>
    </nav>
  );
}

/** Refused connections by reason, a handshake's by cause; a warning sign only on those that call for a look (refusedPhrases). */
export function Refused({ refused, handshakes }: { refused: Record<string, number>; handshakes?: Record<string, number> | undefined }) {
  const ps = refusedPhrases(refused, handshakes);
  if (!ps.length) return <>none</>;
  return (
    <>
      {ps.map((p, i) => (
        <span key={i} class={p.warn ? 'st st-warn' : undefined}>
          {i ? '; ' : ''}
          {p.warn ? <span aria-hidden="true">⚠ </span> : null}
          {p.text}
        </span>
      ))}
    </>
  );
}
