/**
 * Private overlays (docs/overlays.md, docs/network.md "Reconnection and
 * liveness"): the connection gater for `network.allowlist`, and the log of
 * refused inbound connections, so an operator learns that a swarm key leaked.
 *
 *  - `allowlist`: the peer completed the (pnet + noise) handshake but its DID
 *    is not on the allowlist: it holds the swarm key.
 *  - `handshake`: an inbound connection closed before its handshake completed,
 *    on an overlay with a swarm key. Why (`handshakeFailure`, from the error
 *    the connection closed with) decides what the log says: `garbled` (the
 *    bytes made no sense: what a wrong swarm key does, since pnet scrambles
 *    multistream-select and noise; a WARN with the hint), `timeout` (it did
 *    not finish in time: a slow or paused peer, or this node paused) or `gone`
 *    (the peer closed or reset it first: a dial that gave up, a port scan),
 *    both INFO and without the hint; `other` a WARN naming the error.
 *  - `banned`: the peer is serving a ban for persistent flooding (peer-abuse.ts).
 *
 * Each refusal is counted (c0mpute_connections_refused_total{reason}, with
 * `cause` for a handshake: the console tells a wrong key from a peer gone); a WARN
 * line is written at most once per (reason, peer or remote IP) per `windowMs`,
 * carrying the number of refusals suppressed since the previous line, and at
 * most `linesPerReason` (20) per reason (and cause) per `windowMs` in all: a
 * flood from many addresses (an IPv6 prefix, a botnet) writes 20 lines a
 * minute, not one per address; the first line of the next window carries
 * `suppressedOverBudget`, the refusals of that reason left unsaid.
 */
import type { ConnectionGater, MultiaddrConnection, PeerId } from '@libp2p/interface';
import type { Logger } from '../util/log.js';
import { monotonicClock } from '../util/clock.js';
import { INBOUND_REFUSALS, type InboundRefusalCode } from './inbound-guard.js';

export type RefusalReason = 'allowlist' | 'handshake' | 'banned' | 'pending' | 'full' | 'rate';

/** For `pending`: whether one address held its bound of connections still handshaking, or the node all of its (inbound-guard.ts). */
export type PendingScope = 'ip' | 'total';

/** Why an inbound handshake failed (see the file's header). */
export type HandshakeFailure = 'garbled' | 'timeout' | 'gone' | 'other';

/**
 * Classify the error an inbound connection closed with before its handshake completed (libp2p's upgrader wraps
 * what the encryption stage threw in EncryptionFailedError, keeping the message, so the message is read too).
 * Measured on libp2p 3.3: a wrong key gives EncryptionFailedError "Message length length too long - 8 > 2"
 * (multistream-select reading scrambled bytes); a peer that never finishes, TimeoutError when the upgrade's
 * timeout fires (also late, when this process resumes from SIGSTOP); a dial that gave up, a clean close (no
 * error), ECONNRESET or an unexpected EOF. Only `garbled` is what a wrong swarm key produces.
 */
export function handshakeFailure(err: unknown): HandshakeFailure {
  if (err === undefined || err === null) return 'gone';
  const e = err as { name?: unknown; code?: unknown; message?: unknown };
  const name = typeof e.name === 'string' ? e.name : '';
  const code = typeof e.code === 'string' ? e.code : '';
  const msg = typeof e.message === 'string' ? e.message : String(err);
  if (name === 'TimeoutError' || name === 'AbortError' || code === 'ETIMEDOUT' || /timed? ?out|timeout|\baborted\b/i.test(msg)) return 'timeout';
  if (['ECONNRESET', 'EPIPE', 'ECONNABORTED'].includes(code) || name === 'UnexpectedEOFError' || name === 'StreamResetError' || /unexpected eof|unexpected end|stream (was )?(closed|reset)|econnreset|epipe|socket hang up/i.test(msg)) return 'gone';
  if (name === 'EncryptionFailedError' || name === 'InvalidCryptoExchangeError' || name === 'UnsupportedProtocolError' || name === 'InvalidMessageError' || /too long|invalid|decrypt|unsupported protocol|protocol selection|newline|authenticat|\bmac\b|\btag\b/i.test(msg)) return 'garbled';
  return 'other';
}

const HANDSHAKE_MESSAGES: Record<HandshakeFailure, { level: 'warn' | 'info'; msg: string }> = {
  garbled: { level: 'warn', msg: 'refused a connection whose handshake came garbled (a wrong swarm key?)' },
  timeout: { level: 'info', msg: 'an inbound connection did not finish its handshake in time (a slow or paused peer, or this node was paused)' },
  gone: { level: 'info', msg: 'an inbound connection closed before its handshake finished (the peer gave up or went away; a port scan)' },
  other: { level: 'warn', msg: 'refused a connection whose handshake failed' },
};

/** Rate-limits its lines per window on the monotonic clock (default performance.now): a wall-clock step hides none. */
export class RefusalLog {
  #last = new Map<string, { at: number; suppressed: number }>();
  /** Per reason (and cause): lines written in the window begun at `at`, refusals left unsaid past the budget, and whether that was said. */
  #byReason = new Map<string, { at: number; lines: number; suppressed: number; full: boolean }>();
  constructor(private d: { log: Logger; count: (reason: RefusalReason, cause?: HandshakeFailure | PendingScope) => void; clock?: () => number; windowMs?: number; maxKeys?: number; linesPerReason?: number }) {}

  /** `detail.cause` (for `handshake`): why the handshake failed, which picks the message and level; each cause is rate-limited on its own. */
  refused(reason: RefusalReason, who: string, detail: Record<string, unknown> & { cause?: HandshakeFailure | PendingScope } = {}): void {
    this.d.count(reason, detail.cause);
    const now = (this.d.clock ?? monotonicClock)();
    const windowMs = this.d.windowMs ?? 60_000;
    const kind = `${reason}${detail.cause ? `/${detail.cause}` : ''}`;
    const key = `${kind} ${who}`;
    const prev = this.#last.get(key);
    if (prev && now - prev.at < windowMs) {
      prev.suppressed++;
      return;
    }
    const { level, msg } = lineOf(reason, detail);
    let budget = this.#byReason.get(kind);
    if (!budget || now - budget.at >= windowMs) {
      budget = { at: now, lines: 0, suppressed: budget?.suppressed ?? 0, full: false };
      this.#byReason.set(kind, budget);
    }
    const most = this.d.linesPerReason ?? 20;
    if (budget.lines >= most) {
      budget.suppressed++;
      // said once a window, when the lines run out: what follows is counted, not logged
      if (!budget.full) this.d.log[level]({ reason, ...(detail.cause ? { cause: detail.cause } : {}), ...(detail.code ? { code: detail.code } : {}), linesPerWindow: most, windowMs }, `${most} lines of this kind of refusal this window: more are counted (c0mpute_connections_refused_total), not logged, until the next`);
      budget.full = true;
      return;
    }
    budget.lines++;
    const others = budget.suppressed;
    budget.suppressed = 0;
    this.#last.delete(key);
    this.#last.set(key, { at: now, suppressed: 0 });
    while (this.#last.size > (this.d.maxKeys ?? 1_024)) this.#last.delete(this.#last.keys().next().value as string);
    this.d.log[level]({ reason, from: who, suppressedSinceLast: prev?.suppressed ?? 0, ...(others ? { suppressedOverBudget: others } : {}), ...detail }, msg);
  }
}

/** A refusal's line and level: by its reason, an inbound one's by its code, a handshake's by its cause. */
function lineOf(reason: RefusalReason, detail: Record<string, unknown>): { level: 'warn' | 'info'; msg: string } {
  if (reason === 'allowlist') return { level: 'warn', msg: 'refused a connection from a peer not on the allowlist: it completed the private handshake, so it holds the swarm key (has the key leaked?)' };
  if (reason === 'banned') return { level: 'warn', msg: 'refused a connection from a peer banned for flooding' };
  if (reason === 'handshake') return HANDSHAKE_MESSAGES[(detail.cause as HandshakeFailure | undefined) ?? 'other'];
  const inbound = INBOUND_REFUSALS[detail.code as InboundRefusalCode];
  return inbound ? { level: inbound.level, msg: inbound.logs } : { level: 'warn', msg: 'refused an inbound connection' };
}

function ipOf(addr: string): string {
  const m = /^\/ip[46]\/([^/]+)/.exec(addr);
  return m?.[1] ?? addr;
}

/**
 * The gater: refuses peers off the allowlist (when one is set) and peers
 * serving a flood ban (`banned`), both directions; with `watchHandshakes`,
 * reports inbound connections that die before the handshake.
 */
export function overlayGater(o: { allowed?: (p: PeerId) => boolean; banned?: (p: PeerId) => boolean; refusals: RefusalLog; watchHandshakes: boolean }): ConnectionGater {
  const passed = new WeakSet<MultiaddrConnection>();
  const gater: ConnectionGater = {};
  if (o.watchHandshakes) {
    gater.denyInboundConnection = (maConn: MultiaddrConnection) => {
      maConn.addEventListener(
        'close',
        (ev: Event) => {
          if (passed.has(maConn)) return;
          // libp2p's close event carries the error the connection was aborted with (none: the peer closed it)
          const error = (ev as Event & { error?: unknown }).error;
          const text = error === undefined || error === null ? undefined : String((error as { message?: unknown }).message ?? error).slice(0, 200);
          o.refusals.refused('handshake', ipOf(maConn.remoteAddr.toString()), { addr: maConn.remoteAddr.toString(), cause: handshakeFailure(error), ...(text === undefined ? {} : { error: text }) });
        },
        { once: true },
      );
      return false;
    };
  }
  if (o.allowed || o.banned || o.watchHandshakes) {
    gater.denyInboundEncryptedConnection = (p: PeerId, maConn: MultiaddrConnection) => {
      passed.add(maConn);
      if (o.banned?.(p)) {
        o.refusals.refused('banned', p.toString(), { addr: maConn.remoteAddr.toString() });
        return true;
      }
      if (!o.allowed || o.allowed(p)) return false;
      o.refusals.refused('allowlist', p.toString(), { addr: maConn.remoteAddr.toString() });
      return true;
    };
  }
  if (o.allowed || o.banned) {
    const deny = (p: PeerId): boolean => (o.allowed !== undefined && !o.allowed(p)) || (o.banned?.(p) ?? false);
    gater.denyDialPeer = deny;
    gater.denyOutboundEncryptedConnection = deny;
  }
  return gater;
}
