/**
 * `node <args>` run to its end as spawnSync runs it (stdin at its end at once; `status` null when a signal ended it,
 * here only the timeout's SIGKILL), but without blocking the event loop: the CLI tests start their independent
 * invocations side by side (each with its own data directory) instead of one after another.
 */
import { spawn } from 'node:child_process';

export interface NodeRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function runNode(args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeout?: number } = {}): Promise<NodeRun> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, args, { env: opts.env ?? process.env, ...(opts.cwd ? { cwd: opts.cwd } : {}), stdio: ['pipe', 'pipe', 'pipe'] });
    p.stdin.on('error', () => {}); // a child gone before its stdin closed
    p.stdin.end();
    let stdout = '';
    let stderr = '';
    p.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    p.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const giveUp = setTimeout(() => p.kill('SIGKILL'), opts.timeout ?? 60_000);
    p.on('error', (e) => {
      clearTimeout(giveUp);
      reject(e);
    });
    p.on('close', (status) => {
      clearTimeout(giveUp);
      resolve({ status, stdout, stderr });
    });
  });
}
