/** Where a passphrase comes from: C0MPUTE_PASSPHRASE, else a prompt on a terminal (no echo). */
import { createInterface } from 'node:readline';

export async function askPassphrase(prompt: string, confirm = false): Promise<string | undefined> {
  const env = process.env.C0MPUTE_PASSPHRASE;
  if (env !== undefined) return env === '' ? undefined : env;
  if (!process.stdin.isTTY) return undefined;
  const first = await promptHidden(prompt);
  if (confirm && first) {
    const again = await promptHidden('repeat passphrase: ');
    if (again !== first) {
      process.stderr.write('passphrases differ; try again\n');
      return askPassphrase(prompt, confirm);
    }
  }
  return first || undefined;
}

function promptHidden(prompt: string): Promise<string> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    const rlAny = rl as unknown as { _writeToOutput: (s: string) => void; output: NodeJS.WriteStream };
    rlAny._writeToOutput = (s: string) => {
      if (s.startsWith(prompt)) rlAny.output.write(prompt);
    };
    rl.question(prompt, (answer) => {
      rl.close();
      process.stderr.write('\n');
      resolve(answer);
    });
  });
}
