/**
 * Gossip topics: `/c0mpute/1/<overlay>/<kind>`, one per record kind, each
 * carrying exactly one content type (the topic is the type check: a record of
 * any other type on it is rejected).
 */
import { C0Error } from '../errors.js';
import { T } from '../records/kinds.js';

export const DEFAULT_OVERLAY = 'public';
export const TOPIC_PREFIX = '/c0mpute/1/';

/** Gossip kinds and the content type each topic carries. */
export const TOPIC_TYPES = {
  advert: T.advert,
  job: T.job,
  offer: T.offer,
  selection: T.selection,
  receipt: T.receipt,
  acceptance: T.acceptance,
  nondelivery: T.nondelivery,
  presence: T.presence,
  'pool-head': 'pool/1',
  'pool-witness': 'pool-witness/1',
  'pool-evidence': 'pool-evidence/1',
} as const;

export type TopicKind = keyof typeof TOPIC_TYPES;
export const TOPIC_KINDS = Object.keys(TOPIC_TYPES) as TopicKind[];

/**
 * Records that may travel attached to a message of a kind (message framing,
 * docs/network.md): an offer may carry the advert it cites.
 */
export const ATTACHABLE: Partial<Record<TopicKind, readonly TopicKind[]>> = {
  offer: ['advert'],
};
/** At most this many attachments per message. */
export const MAX_ATTACHMENTS = 1;

const OVERLAY_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;

export function isTopicKind(k: unknown): k is TopicKind {
  return typeof k === 'string' && Object.prototype.hasOwnProperty.call(TOPIC_TYPES, k);
}

export function checkOverlay(overlay: string): string {
  if (!OVERLAY_RE.test(overlay)) throw new C0Error('NET_BAD_OVERLAY', `overlay name "${overlay.slice(0, 70)}" must match ${OVERLAY_RE}`, { field: 'overlay' });
  return overlay;
}

export function topicFor(kind: TopicKind, overlay: string = DEFAULT_OVERLAY): string {
  if (!isTopicKind(kind)) throw new C0Error('NET_UNKNOWN_KIND', `unknown gossip kind "${String(kind).slice(0, 40)}"`, { field: 'kind' });
  return `${TOPIC_PREFIX}${checkOverlay(overlay)}/${kind}`;
}

/** Parse a topic string; undefined when it is not one of ours. */
export function parseTopic(topic: string): { overlay: string; kind: TopicKind } | undefined {
  if (!topic.startsWith(TOPIC_PREFIX)) return undefined;
  const rest = topic.slice(TOPIC_PREFIX.length).split('/');
  if (rest.length !== 2) return undefined;
  const [overlay, kind] = rest as [string, string];
  if (!OVERLAY_RE.test(overlay) || !isTopicKind(kind)) return undefined;
  return { overlay, kind };
}

export function expectedType(kind: TopicKind): string {
  return TOPIC_TYPES[kind];
}

/** The gossip kind carrying a content type, if any. */
export function kindForType(type: string): TopicKind | undefined {
  for (const k of TOPIC_KINDS) if (TOPIC_TYPES[k] === type) return k;
  return undefined;
}
