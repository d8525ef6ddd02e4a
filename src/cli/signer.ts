/** Load the node's identity for a command that signs, asking for the passphrase when needed. */
import { isKeyEncrypted, loadIdentity, type Identity } from '../node/identity.js';
import { askPassphrase } from './passphrase.js';

export async function loadNodeIdentity(dataDir: string): Promise<Identity> {
  const pass = isKeyEncrypted(dataDir) ? await askPassphrase('passphrase: ') : undefined;
  return loadIdentity(dataDir, pass);
}
