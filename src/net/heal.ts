/**
 * Re-gossip after a heal (docs/network.md "Sync after a partition"; issue #16,
 * DESIGN §3.4). Gossip does not replay history and sync runs only between two
 * peers that (re)connect, so after a partition heals the nodes with a link
 * across the cut learn what the other side published meanwhile, and a node
 * whose neighbours are all on its own side would not learn it until the next
 * republish (up to half an advert's lifetime). A node therefore forwards on
 * gossip a record it accepted from a sync when the record was issued after the
 * node joined: had it been connected all along, gossip would have brought it,
 * so its absence means a cut, and its own side probably misses it too. A fresh
 * or rejoining node syncs only records issued before it started, so joining
 * costs no re-gossip. Receivers that already hold the record drop it as a
 * duplicate (same bytes, same message id).
 *
 * Only adverts, and only from a signer that had an advert accepted here
 * before: presence is republished every few seconds anyway, and a record from
 * a key new to this node is what a Sybil flood is made of — re-gossiping those
 * would let a flood that the per-peer gossip limits held back pass through an
 * honest node's sync and get that node rate-limited by its neighbours (the e2e
 * Sybil-flood test failed once in a full run when every synced record was
 * forwarded). A provider new during the partition arrives with the next sync
 * or republish.
 */
import type { Opened } from '../records/envelope.js';
import { T, validityWindow } from '../records/kinds.js';

/**
 * Should a record accepted from a sync be forwarded on gossip? `knownAdvertiser`:
 * its signer had an advert accepted here before this one; `joinedAt`: when this
 * node's network started (ms).
 */
export function regossipAfterSync(f: { rec: Pick<Opened, 'type' | 'record'>; knownAdvertiser?: boolean }, joinedAt: number): boolean {
  if (f.rec.type !== T.advert || f.knownAdvertiser !== true) return false;
  const w = validityWindow(f.rec.type, f.rec.record);
  return w !== undefined && w[0] >= joinedAt;
}
