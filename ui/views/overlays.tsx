/**
 * Overlays and the steward: per overlay its members and refused connections;
 * on a steward, the entitlement tree (in tree order, each parent followed by
 * the sums of all below it) with each team's guarantee, spent, reserved and
 * borrowed energy as bars (then the entitlements the ledger charges that the
 * tree no longer has, and the ledger's total), the queued claims with their reasons,
 * and the ledger's head with how far witnesses have countersigned it, warned
 * about (whatever its grade) when a witness holds receipts that contradict it
 * or evidence that it signed two histories; on a witness, what it holds per
 * steward, with a steward whose ledger went back flagged.
 */
import { fmtJoules, overlayQuery, shortDid, useJson, useLiveVersion, useNow } from '../lib.js';
import { Bar, Did, ErrorBox, Loading, Refused, Section, Status, TableBox } from '../parts.js';
import { inTreeOrder, teamTotals, type TeamRow } from '../../src/util/team-tree.js';
import { coverageStatus, coverageText, rolledBackWarning, stewardWarnings, witnessStewardLine, witnessSummary, type StewardTrust, type WitnessView } from '../trust.js';

interface OverviewData {
  primary: string;
  overlays: Array<{ name: string; roles: string[]; peers: Array<{ peerId: string; did?: string }>; refused: Record<string, number>; handshakes?: Record<string, number>; steward?: string }>;
}

interface Team extends TeamRow {
  used_uj: number;
}

interface StewardData extends StewardTrust {
  ledger: { length: number; head?: string };
  teams: Team[];
  /** entitlements the ledger charges that the steward's tree no longer has (absent: none) */
  notInTree?: Array<Pick<TeamRow, 'id' | 'spent_uj' | 'reserved_uj' | 'borrowed_uj' | 'held_devices' | 'open_claims'>>;
  queued: Array<{ claim: string; entitlement: string; reason: string; reasons: string[] }>;
  attestation: { grade: string; witnessedLength: number; witnesses: Array<{ witness: string; length: number }> };
}

export function Overlays() {
  const v = useLiveVersion((e) => e.type === 'records' || e.type === 'health' || e.type === 'job', 1000);
  const r = useJson<OverviewData>('/v1/console/overview', v);
  if (!r.data) return r.error ? <ErrorBox error={r.error} /> : <Loading what="overlays" />;
  return (
    <>
      <h1 tabIndex={-1}>Overlays</h1>
      {r.data.overlays.map((o) => (
        <Section key={o.name} title={`Overlay ${o.name}`}>
          <dl class="kv">
            <dt>This node's roles</dt>
            <dd>{o.roles.join(', ')}</dd>
            {o.steward ? (
              <>
                <dt>Steward</dt>
                <dd>
                  <Did d={o.steward} />
                </dd>
              </>
            ) : null}
            <dt>Members connected</dt>
            <dd>
              {o.peers.length}:{' '}
              {o.peers.map((p, i) => (
                <span key={p.peerId}>
                  {i ? ', ' : ''}
                  <Did d={p.did} />
                </span>
              ))}
            </dd>
            <dt>Refused connections</dt>
            <dd class="refused">
              <Refused refused={o.refused} handshakes={o.handshakes} />
            </dd>
          </dl>
          {o.roles.includes('steward') ? <StewardPanel overlay={o.name === r.data!.primary ? undefined : o.name} version={v} connected={new Set(o.peers.map((p) => p.did).filter((x): x is string => !!x))} /> : null}
          {o.roles.includes('witness') ? <WitnessPanel overlay={o.name === r.data!.primary ? undefined : o.name} version={v} /> : null}
        </Section>
      ))}
    </>
  );
}

type Summed = Pick<TeamRow, 'spent_uj' | 'reserved_uj' | 'borrowed_uj' | 'held_devices' | 'open_claims'>;

/**
 * A row of summed figures: `all below <id>` (every entitlement below it; a row counts only the claims made under its
 * own entitlement), or the whole ledger's (every row, in the tree or not: shown when some usage is under entitlements
 * the tree lacks).
 */
function SumRow({ label, rows, depth, mark }: { label: string; rows: Summed[]; depth?: number; mark: { 'data-below': string } | { 'data-ledger-total': '' } }) {
  const { spent_uj: spent, reserved_uj: reserved, borrowed_uj: borrowed, held_devices: held } = teamTotals(rows);
  return (
    <tr class="below" {...mark}>
      <th scope="row" style={depth === undefined ? undefined : { paddingLeft: `${(depth + 1) * 1.2}em` }}>
        <small>{label}</small>
      </th>
      <td />
      <td />
      <td class="spent-uj" data-uj={spent}>
        {fmtJoules(spent)}
      </td>
      <td data-uj={reserved}>{fmtJoules(reserved)}</td>
      <td data-uj={borrowed}>{fmtJoules(borrowed)}</td>
      <td>{held}</td>
      <td class="bar-col" />
    </tr>
  );
}

function StewardPanel({ overlay, version, connected }: { overlay: string | undefined; version: number; connected: ReadonlySet<string> }) {
  const s = useJson<StewardData>(`/v1/steward${overlayQuery(overlay)}`, version);
  if (!s.data) return s.error ? <ErrorBox error={s.error} /> : <Loading what="the steward" />;
  const d = s.data;
  const scale = Math.max(...d.teams.map((t) => Math.max(t.guarantee_uj, t.used_uj + t.borrowed_uj, t.limit_uj ?? 0)), 1);
  const warnings = stewardWarnings(d, shortDid);
  return (
    <div class="steward">
      {warnings.length ? (
        <div class="error" role="alert" id="ledger-warnings">
          <strong>This steward's ledger and attestation are not to be trusted:</strong>
          <ul>
            {warnings.map((w) => (
              <li key={w}>attestation WARNING: {w}</li>
            ))}
          </ul>
        </div>
      ) : null}
      <h3>Entitlement tree</h3>
      <p class="legend" aria-hidden="true">
        <span class="seg-key spent" /> spent <span class="seg-key reserved" /> reserved <span class="seg-key borrowed" /> borrowed <span class="mark-key" /> guarantee
      </p>
      <TableBox label="Entitlement tree (scrolls sideways on a narrow window)">
      <table class="teams">
        <caption>Each team's energy against its guarantee (bars to one scale; figures in joules)</caption>
        <thead>
          <tr>
            <th scope="col">Team</th>
            <th scope="col">Priority</th>
            <th scope="col">Guarantee</th>
            <th scope="col">Spent</th>
            <th scope="col">Reserved</th>
            <th scope="col">Borrowed</th>
            <th scope="col">Devices held</th>
            <th scope="col" class="bar-col">Budget</th>
          </tr>
        </thead>
        <tbody>
          {inTreeOrder(d.teams).flatMap(({ team: t, depth, below }) => [
            <tr key={t.id} data-team={t.id}>
              <th scope="row" style={depth ? { paddingLeft: `${depth * 1.2}em` } : undefined}>
                {t.parent ? <span class="indent" aria-hidden="true">└ </span> : null}
                {t.id}
                {t.parent ? <small> (in {t.parent})</small> : null}
              </th>
              <td>{t.priority}</td>
              <td>{fmtJoules(t.guarantee_uj)}</td>
              <td class="spent-uj" data-uj={t.spent_uj}>
                {fmtJoules(t.spent_uj)}
              </td>
              <td data-uj={t.reserved_uj}>{fmtJoules(t.reserved_uj)}</td>
              <td data-uj={t.borrowed_uj}>{fmtJoules(t.borrowed_uj)}</td>
              <td>
                {t.held_devices} of {t.guarantee_devices}
              </td>
              <td class="bar-col">
                <Bar
                  label={`${t.id} in joules`}
                  scale={scale}
                  parts={[
                    { name: 'spent', value: t.spent_uj, cls: 'spent' },
                    { name: 'reserved', value: t.reserved_uj, cls: 'reserved' },
                    { name: 'borrowed', value: t.borrowed_uj, cls: 'borrowed' },
                  ]}
                  mark={{ name: 'guarantee', value: t.guarantee_uj }}
                />
              </td>
            </tr>,
            // a row counts the claims under that entitlement itself: a parent's is followed by the sums of all below it
            ...(below.length ? [<SumRow key={`${t.id} below`} label={`all below ${t.id}`} depth={depth} rows={below} mark={{ 'data-below': t.id }} />] : []),
          ])}
          {/* usage under entitlements the tree no longer has: still the ledger's, so shown, and the ledger's total after */}
          {d.notInTree?.length
            ? [
                <tr key=" not in tree" class="below">
                  <th scope="row" colSpan={8}>
                    <small>Not in the tree (the ledger charges them; the tree file no longer has them, so nothing new is admitted under them)</small>
                  </th>
                </tr>,
                ...d.notInTree.map((t) => (
                  <tr key={` not in tree ${t.id}`} data-not-in-tree={t.id}>
                    <th scope="row" style={{ paddingLeft: '1.2em' }}>
                      {t.id}
                    </th>
                    <td />
                    <td />
                    <td class="spent-uj" data-uj={t.spent_uj}>
                      {fmtJoules(t.spent_uj)}
                    </td>
                    <td data-uj={t.reserved_uj}>{fmtJoules(t.reserved_uj)}</td>
                    <td data-uj={t.borrowed_uj}>{fmtJoules(t.borrowed_uj)}</td>
                    <td>{t.held_devices}</td>
                    <td class="bar-col" />
                  </tr>
                )),
                <SumRow key=" ledger total" label="ledger total" rows={[...d.teams, ...d.notInTree]} mark={{ 'data-ledger-total': '' }} />,
              ]
            : null}
        </tbody>
      </table>
      </TableBox>
      <h3>Queue</h3>
      {d.queued.length === 0 ? (
        <p>No claims are queued.</p>
      ) : (
        <TableBox label="Queued claims (scrolls sideways on a narrow window)">
        <table>
          <caption>Queued claims, in the order they will be admitted</caption>
          <thead>
            <tr>
              <th scope="col">Claim</th>
              <th scope="col">Team</th>
              <th scope="col">Why it waits</th>
            </tr>
          </thead>
          <tbody>
            {d.queued.map((q) => (
              <tr key={q.claim}>
                <td>
                  <code>{q.claim.slice(0, 16)}</code>
                </td>
                <td>{q.entitlement}</td>
                <td>
                  {q.reason}
                  {q.reasons.length > 1 ? <small> ({q.reasons.join('; ')})</small> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        </TableBox>
      )}
      <h3>Ledger</h3>
      <dl class="kv">
        <dt>Head</dt>
        <dd>
          length {d.ledger.length}
          {d.ledger.head ? (
            <>
              , <code class="wrap">{d.ledger.head}</code>
            </>
          ) : null}
        </dd>
        <dt>Witnesses</dt>
        <dd id="witness-coverage">
          {coverageText(d)} <Status s={coverageStatus(d)} />
        </dd>
        {d.attestation.witnesses.map((w) => (
          <>
            <dt key={`${w.witness}-t`}>
              <Did d={w.witness} />
            </dt>
            <dd key={`${w.witness}-d`}>
              countersigned to length {w.length} of {d.ledger.length}
              {/* the two facts side by side: a witness behind the head that is not connected cannot catch up (QA qaCon F1) */}
              {w.length < d.ledger.length && !connected.has(w.witness) ? '; not connected to this steward now' : ''}
            </dd>
          </>
        ))}
      </dl>
    </div>
  );
}

function WitnessPanel({ overlay, version }: { overlay: string | undefined; version: number }) {
  const w = useJson<WitnessView>(`/v1/witness${overlayQuery(overlay)}`, version);
  // "last cosigned … (12 s ago)" ages between the feed's samples too
  const now = useNow(5000);
  if (!w.data) return w.error ? <ErrorBox error={w.error} /> : <Loading what="the witness" />;
  const d = w.data;
  const sum = witnessSummary(d);
  const rows = Object.entries(d.stewards);
  const s = d.strangers;
  return (
    <div class="witness" id="witness-panel">
      <h3>Witness</h3>
      <p id="witness-summary" class={sum.warn ? 'error' : undefined} role={sum.warn ? 'alert' : undefined}>
        {sum.text}
      </p>
      {s ? (
        <p>
          Keys neither held nor named: {s.heldBack} held back ({s.unreached} not reached), {s.waiting ?? 0} heads waiting, {s.ignored} heads dropped since start
        </p>
      ) : null}
      {rows.length === 0 ? (
        <p>No steward held, none with evidence kept.</p>
      ) : (
        <dl class="kv">
          {rows.map(([steward, st]) => {
            const rb = rolledBackWarning(st);
            return (
              <>
                <dt key={`${steward}-t`}>
                  <Did d={steward} />
                </dt>
                <dd key={`${steward}-d`} data-steward={steward}>
                  {witnessStewardLine(st, now)}
                  {st.evidence ? ` (c0mpute witness evidence ${steward} --out DIR writes them as records)` : ''} {st.evidence || rb ? <Status s="contradicted" /> : null}
                  {rb ? (
                    <div class="error" role="alert">
                      {rb}
                    </div>
                  ) : null}
                </dd>
              </>
            );
          })}
        </dl>
      )}
    </div>
  );
}
