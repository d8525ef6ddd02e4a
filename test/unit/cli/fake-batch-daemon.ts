/**
 * A fake daemon for `c0mpute batch run` CLI tests: a data directory whose daemon.json points at a local HTTP server
 * that plans the lines it is asked for on one provider and answers each `/v1/run` by naming its order, then either
 * completes it with an output and a receipt (`hold` false) or holds the stream open (`hold` true: the line is in
 * flight; `holdAfter` N: the first N lines complete, the rest are held), the provider with `slots` free slots (default 4). Every request is counted in `asked`; `runs` and `closed` count the lines posted and their streams closed.
 */
import { fakeDaemon } from './fake-daemon.js';

export interface FakeBatchDaemon {
  asked: string[];
  readonly runs: number;
  readonly closed: number;
  /** Lines past this many are held in flight (`holdAfter`; may be changed between runs). */
  holdAfter: number;
  close(): void;
}

const usd = (amount: string) => ({ amount, currency: 'USD' });

export async function fakeBatchDaemon(dataDir: string, provider: string, o: { hold?: boolean; holdAfter?: number; slots?: number; workload?: string } = {}): Promise<FakeBatchDaemon> {
  const workload = o.workload ?? 'builtin.sha256';
  const d = { asked: [] as string[], runs: 0, closed: 0, holdAfter: o.holdAfter ?? Infinity, close: () => void server.close() };
  const server = await fakeDaemon(dataDir, (req, res) => {
    d.asked.push(`${req.method} ${req.url}`);
    const send = (v: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(v));
    };
    if (req.url?.startsWith('/v1/market')) return send({ presence: { providers: [{ did: provider, freeSlots: o.slots ?? 4 }] }, adverts: [] });
    if (req.url?.startsWith('/v1/batch/plan')) {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        // the lines asked for, all on the one provider
        const n = (JSON.parse(body) as { batch: { workloads: Array<{ lines: number }> } }).batch.workloads.reduce((a, w) => a + w.lines, 0);
        const cost = usd((0.002 * n).toFixed(3));
        send({ plannedAt: 0, windowMs: 600_000, assignments: [{ workload, provider, lines: n, ask: usd('0.002'), unit: 'job', cost }], providers: [{ provider, lines: n, cost: [cost] }], totals: [cost], lines: n });
      });
      return;
    }
    if (req.url?.startsWith('/v1/run')) {
      const n = ++d.runs;
      req.resume();
      res.on('close', () => d.closed++);
      const job = `sha256:${String(n).padStart(64, '0')}`;
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(JSON.stringify({ e: 'order', job }) + '\n');
      if (o.hold || n > d.holdAfter) return; // held open: the line is in flight
      const receipt = { address: `sha256:${String(n).padStart(64, 'f')}`, record: { job, status: 'completed', provider, price: usd('0.002') } };
      res.end(JSON.stringify({ e: 'result', result: { status: 'completed', output: Buffer.from('now').toString('base64'), job: { address: job }, receipt } }) + '\n');
      return;
    }
    res.writeHead(404).end();
  });
  return d;
}
