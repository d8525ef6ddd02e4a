/**
 * Where a passphrase comes from, in this order: `--passphrase-file <file>`
 * (a root option of every command), `C0MPUTE_PASSPHRASE`,
 * `C0MPUTE_PASSPHRASE_FILE`, else a prompt on a terminal (no echo). A file
 * holds the passphrase on its first line (one trailing newline is dropped); an
 * empty file is refused (KEY_PASSPHRASE_FILE_INVALID), never taken as "none".
 * Creating and opening a key (`init`, `keys init`, `start`, `run`, …) all read
 * it the same way.
 */
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { C0Error } from '../errors.js';
import { Interrupted } from './context.js';

let flagFile: string | undefined;

/** Set from the root `--passphrase-file` option before any command runs. */
export function setPassphraseFile(path: string | undefined): void {
  flagFile = path;
}

/** `declined`: the user passed --no-passphrase. */
export type PassphraseSource = 'flag-file' | 'env' | 'env-file' | 'prompt' | 'declined' | 'none';

/**
 * The passphrase in a file. An empty one is refused: a file was named to encrypt the key, and an empty one (a secret
 * mount or template that rendered nothing) must not quietly mean "store it in the clear"; no passphrase is chosen with
 * `--no-passphrase` (or an empty `C0MPUTE_PASSPHRASE`).
 */
function readPassFile(path: string, what: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new C0Error('INPUT_UNREADABLE', `${what} ${path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`, { field: 'passphrase-file' });
  }
  const pass = text.replace(/\r?\n$/, '');
  if (pass.includes('\n')) throw new C0Error('KEY_PASSPHRASE_FILE_INVALID', `${what} ${path}: expected the passphrase alone on one line`, { field: 'passphrase-file' });
  if (pass === '') {
    throw new C0Error('KEY_PASSPHRASE_FILE_INVALID', `${what} ${path} is empty: put the passphrase on its first line (to store a new key unencrypted, pass --no-passphrase instead)`, { field: 'passphrase-file' });
  }
  return pass;
}

/**
 * The passphrase and where it came from. `none`: no file, no variable and no
 * terminal to ask on, so the caller decides (and says) what that means.
 */
export async function passphraseFrom(prompt: string, confirm = false): Promise<{ pass: string | undefined; source: PassphraseSource }> {
  if (flagFile !== undefined) return { pass: readPassFile(flagFile, '--passphrase-file'), source: 'flag-file' };
  const env = process.env.C0MPUTE_PASSPHRASE;
  if (env !== undefined) return { pass: env === '' ? undefined : env, source: 'env' };
  const envFile = process.env.C0MPUTE_PASSPHRASE_FILE;
  if (envFile) return { pass: readPassFile(envFile, 'C0MPUTE_PASSPHRASE_FILE'), source: 'env-file' };
  if (!process.stdin.isTTY) return { pass: undefined, source: 'none' };
  const first = await promptHidden(prompt);
  if (confirm && first) {
    const again = await promptHidden('repeat passphrase: ');
    if (again !== first) {
      process.stderr.write('passphrases differ; try again\n');
      return passphraseFrom(prompt, confirm);
    }
  }
  return { pass: first || undefined, source: 'prompt' };
}

export async function askPassphrase(prompt: string, confirm = false): Promise<string | undefined> {
  return (await passphraseFrom(prompt, confirm)).pass;
}

/** Say on stderr that a new key is stored unencrypted when nobody chose that (no terminal, no passphrase source). */
export function warnUnencrypted(keyFile: string, source: PassphraseSource): void {
  if (source !== 'none') return;
  process.stderr.write(
    `warning: the key ${keyFile} is stored UNENCRYPTED: there is no terminal to ask for a passphrase and neither --passphrase-file, C0MPUTE_PASSPHRASE nor C0MPUTE_PASSPHRASE_FILE is set (pass --no-passphrase to choose this without the warning)\n`,
  );
}

/**
 * Ask on the terminal without echo. Ctrl-D (the input ends) and Ctrl-C (readline's SIGINT, the terminal being raw)
 * give no answer: both reject with KEY_PASSPHRASE_ABORTED, Ctrl-C as an interruption (exit 130), so the command ends
 * with its `error CODE` line before it has done anything, never with a promise left pending.
 */
function promptHidden(prompt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    const rlAny = rl as unknown as { _writeToOutput: (s: string) => void; output: NodeJS.WriteStream };
    rlAny._writeToOutput = (s: string) => {
      if (s.startsWith(prompt)) rlAny.output.write(prompt);
    };
    let settled = false;
    const end = (f: () => void) => {
      if (settled) return;
      settled = true;
      rl.close();
      process.stderr.write('\n');
      f();
    };
    rl.question(prompt, (answer) => end(() => resolve(answer)));
    rl.on('SIGINT', () => end(() => reject(new Interrupted('KEY_PASSPHRASE_ABORTED', 'interrupted at the passphrase prompt; nothing was done'))));
    rl.on('close', () => end(() => reject(new C0Error('KEY_PASSPHRASE_ABORTED', 'the input ended at the passphrase prompt (Ctrl-D) before a passphrase was given; nothing was done'))));
  });
}
