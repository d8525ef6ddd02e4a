/** Overview: identity, roles, overlays, peers, and health charts (event-loop lag, queues, records per kind and verdict). */
import { useState } from 'preact/hooks';
import { fmtDuration, useFeed, useJson, useLiveVersion, type HealthSample } from '../lib.js';
import { Did, ErrorBox, Loading, Refused, Section, Spark, Status, TableBox } from '../parts.js';

interface OverviewData {
  did: string;
  api: string;
  uptimeMs: number;
  primary: string;
  overlays: Array<{ name: string; roles: string[]; peerId: string; addrs: string[]; peers: Array<{ peerId: string; did?: string; addrs: string[]; streams?: { out: boolean; in: boolean }; backoffMs?: number }>; refused: Record<string, number>; handshakes?: Record<string, number>; steward?: string; health: { state: string; code?: string; message?: string; warnings?: Array<{ code: string; message: string }> } }>;
  samples: HealthSample[];
}

export function Overview() {
  const v = useLiveVersion((e) => e.type === 'health');
  const r = useJson<OverviewData>('/v1/console/overview', v);
  const [live, setLive] = useState<HealthSample[]>([]);
  useFeed((e) => {
    if (e.type === 'health') setLive((s) => [...s, e.sample].slice(-60));
  });
  const d = r.data;
  if (!d) return r.error ? <ErrorBox error={r.error} /> : <Loading what="the node's status" />;
  const samples = [...d.samples, ...live.filter((s) => s.at > (d.samples.at(-1)?.at ?? 0))].slice(-60);
  return (
    <>
      <h1 tabIndex={-1}>Overview</h1>
      <ErrorBox error={r.error} />
      <Section title="Identity">
        <dl class="kv">
          <dt>DID</dt>
          <dd>
            <code class="wrap">{d.did}</code>
          </dd>
          <dt>Control API</dt>
          <dd>
            <code>http://{d.api}</code>
          </dd>
          <dt>Up for</dt>
          <dd>{fmtDuration(d.uptimeMs)}</dd>
        </dl>
      </Section>
      {d.overlays.map((o) => (
        <Section key={o.name} title={`Overlay ${o.name}${o.name === d.primary ? ' (primary)' : ''}`}>
          <dl class="kv">
            <dt>Roles</dt>
            <dd>{o.roles.join(', ') || 'none'}</dd>
            <dt>Peer ID</dt>
            <dd>
              <code class="wrap">{o.peerId}</code>
            </dd>
            <dt>Listening</dt>
            <dd>
              {o.addrs.map((a) => (
                <code key={a} class="wrap block">
                  {a}
                </code>
              ))}
            </dd>
            <dt>Network</dt>
            <dd>
              <Status s={o.health.state} /> {o.health.message ?? ''}
              {o.health.code ? <code> [{o.health.code}]</code> : null}
              {/* what is wrong while the node works: a bootstrap entry failing, a key held by two processes (status prints them too) */}
              {(o.health.warnings ?? []).map((w) => (
                <div key={w.code + w.message} class="st-mid">
                  ⚠ {w.message} <code>[{w.code}]</code>
                </div>
              ))}
            </dd>
            {o.steward ? (
              <>
                <dt>Steward</dt>
                <dd>
                  <Did d={o.steward} />
                </dd>
              </>
            ) : null}
            <dt>Refused connections</dt>
            <dd class="refused">
              <Refused refused={o.refused} handshakes={o.handshakes} />
            </dd>
          </dl>
          <TableBox label="Peers (scrolls sideways on a narrow window)">
          <table>
            <caption>Peers ({o.peers.length})</caption>
            <thead>
              <tr>
                <th scope="col">Peer</th>
                <th scope="col">State</th>
                <th scope="col">Gossip</th>
                <th scope="col">Addresses</th>
              </tr>
            </thead>
            <tbody>
              {o.peers.map((p) => (
                <tr key={p.peerId}>
                  <td>{p.did ? <Did d={p.did} /> : <code>{p.peerId.slice(0, 12)}…</code>}</td>
                  <td>
                    <Status s="connected" />
                  </td>
                  <td class="gossip">{gossipLink(p)}</td>
                  <td>
                    {p.addrs.slice(0, 2).map((a) => (
                      <code key={a} class="wrap block">
                        {a}
                      </code>
                    ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          </TableBox>
          <Health samples={samples} overlay={o.name} />
        </Section>
      ))}
    </>
  );
}

function Health({ samples, overlay }: { samples: HealthSample[]; overlay: string }) {
  const per = samples.map((s) => s.overlays[overlay]).filter((x) => x !== undefined);
  const kinds = [...new Set(per.flatMap((s) => Object.keys(s.records)))].sort();
  const queues = [...new Set(per.flatMap((s) => Object.keys(s.queues)))].sort();
  const minutes = samples.length > 1 ? ((samples.at(-1)!.at - samples[0]!.at) / 60000).toFixed(1) : '0';
  return (
    <>
      <h3>Health (last {minutes} min, one point per sample)</h3>
      <div class="charts">
        <figure>
          <Spark values={samples.map((s) => s.lagMs)} label="event-loop lag in ms" />
          <figcaption>event-loop lag: {samples.at(-1)?.lagMs ?? 0} ms</figcaption>
        </figure>
        <figure>
          <Spark values={per.map((s) => s.peers)} label="peers" />
          <figcaption>peers: {per.at(-1)?.peers ?? 0}</figcaption>
        </figure>
        {queues.map((q) => (
          <figure key={q}>
            <Spark values={per.map((s) => s.queues[q] ?? 0)} label={`${q} queue depth`} />
            <figcaption>
              {q} queue: {per.at(-1)?.queues[q] ?? 0}
            </figcaption>
          </figure>
        ))}
      </div>
      <TableBox label="Records per kind (scrolls sideways on a narrow window)">
      <table>
        <caption>Records per kind, summed over the samples shown</caption>
        <thead>
          <tr>
            <th scope="col">Kind</th>
            <th scope="col">Accepted</th>
            <th scope="col">Ignored</th>
            <th scope="col">Rejected</th>
            <th scope="col">Accepted per sample</th>
          </tr>
        </thead>
        <tbody>
          {kinds.length === 0 ? (
            <tr>
              <td colSpan={5}>no records in this window</td>
            </tr>
          ) : (
            kinds.map((k) => {
              const sum = (v: string) => per.reduce((n, s) => n + (s.records[k]?.[v] ?? 0), 0);
              return (
                <tr key={k}>
                  <th scope="row">{k}</th>
                  <td>{sum('accept')}</td>
                  <td>{sum('ignore')}</td>
                  <td>{sum('reject')}</td>
                  <td>
                    <Spark values={per.map((s) => s.records[k]?.accept ?? 0)} label={`${k} accepted`} />
                  </td>
                </tr>
              );
            })
          )}
        </tbody>
      </table>
      </TableBox>
    </>
  );
}

/** A peer's gossip link as GET /v1/peers has it: its streams each way, and how long this node's prune backoff still holds it off. */
function gossipLink(p: { streams?: { out: boolean; in: boolean }; backoffMs?: number }): string {
  if (!p.streams) return 'no gossip';
  const dir = (ok: boolean, w: string) => `${w} ${ok ? '✓' : '✗'}`;
  const off = p.backoffMs ? `, backoff ${fmtDuration(p.backoffMs)}` : '';
  return `streams ${dir(p.streams.out, 'out')} ${dir(p.streams.in, 'in')}${off}`;
}
