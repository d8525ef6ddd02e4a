/** A held record decoded: its type, signer and content address, and its fields, with every address in it a link to that record. */
import type { ComponentChildren } from 'preact';
import { ADDRESS_RE, looksLikeDid, overlayQuery, peer, useJson } from '../lib.js';
import { isTimeField, whenText } from '../format.js';
import { AddrLink, Did, ErrorBox, Loading } from '../parts.js';

interface RecordView {
  type: string;
  address: string;
  signer: string;
  size: number;
  record: unknown;
}

function Value({ v, overlay, field }: { v: unknown; overlay?: string | undefined; field?: string }): ComponentChildren {
  // a time (epoch ms) as a date and time beside the number
  if (field !== undefined && isTimeField(field, v))
    return (
      <>
        <code>{v}</code> <span class="when">{whenText(v)}</span>
      </>
    );
  if (typeof v === 'string') {
    if (ADDRESS_RE.test(v)) return <AddrLink a={v} overlay={overlay} />;
    // a DID chip only for a DID: a peer's free text that starts with `did:key:` is text (review s43 R3 F1)
    if (looksLikeDid(v)) return <Did d={v} />;
    return <code class="wrap">{peer(v)}</code>;
  }
  if (typeof v !== 'object' || v === null) return <code>{String(v)}</code>;
  if (Array.isArray(v)) {
    if (v.length === 0) return <code>[]</code>;
    return (
      <ol class="fields">
        {v.map((x, i) => (
          <li key={i}>
            <Value v={x} overlay={overlay} />
          </li>
        ))}
      </ol>
    );
  }
  return (
    <dl class="fields">
      {Object.entries(v as Record<string, unknown>).map(([k, x]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>
            <Value v={x} overlay={overlay} field={k} />
          </dd>
        </div>
      ))}
    </dl>
  );
}

export function RecordPage({ address, overlay }: { address: string; overlay?: string | undefined }) {
  const r = useJson<RecordView>(`/v1/console/record/${encodeURIComponent(address)}${overlayQuery(overlay)}`);
  return (
    <>
      <h1 tabIndex={-1}>Record</h1>
      <p>
        <code class="wrap" id="record-address">
          {address}
        </code>
      </p>
      <ErrorBox error={r.error} />
      {r.data ? (
        <article class="record" aria-labelledby="record-type">
          <h2 id="record-type">{r.data.type}</h2>
          <dl class="kv">
            <dt>Signer</dt>
            <dd>
              <code class="wrap">{r.data.signer}</code>
            </dd>
            <dt>Envelope</dt>
            <dd>{r.data.size} bytes (COSE_Sign1; its SHA-256 is the address above)</dd>
          </dl>
          <h3>Fields</h3>
          <Value v={r.data.record} overlay={overlay} />
        </article>
      ) : r.error ? null : (
        <Loading what="the record" />
      )}
    </>
  );
}
