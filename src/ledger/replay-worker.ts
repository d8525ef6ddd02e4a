/** Worker side of replayParallel and firstRefusedEntry (src/ledger/replay.ts): opens (fully verifies) a chunk of pool/1 entries. */
import { parentPort } from 'node:worker_threads';
import { C0Error } from '../errors.js';
import { open } from '../records/envelope.js';
import { POOL_TYPE } from './entry.js';

export interface ChunkRequest {
  id: number;
  start: number;
  entries: Uint8Array[];
  /** Only whether (and where) an entry is refused: no addresses, signers or records sent back. */
  verifyOnly?: boolean;
}

export interface ChunkResult {
  id: number;
  addresses: string[];
  signers: string[];
  records: unknown[];
  /** the first entry in the chunk that did not open */
  failure?: { index: number; code: string; message: string };
}

parentPort?.on('message', (req: ChunkRequest) => {
  const res: ChunkResult = { id: req.id, addresses: [], signers: [], records: [] };
  for (let i = 0; i < req.entries.length; i++) {
    try {
      const o = open(req.entries[i]!, POOL_TYPE);
      if (req.verifyOnly) continue;
      res.addresses.push(o.address);
      res.signers.push(o.signer);
      res.records.push(o.record);
    } catch (e) {
      if (!(e instanceof C0Error)) throw e;
      res.failure = { index: req.start + i, code: e.code, message: e.message };
      break;
    }
  }
  parentPort!.postMessage(res);
});
