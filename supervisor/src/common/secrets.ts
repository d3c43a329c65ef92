/**
 * Provider keys, held by the supervisor only (shared/DESIGN.md, "Secrets"). One 0600 file per provider
 * under the state root's keys dir (0700): `<root>/keys/providers/<provider>.key`. This machine class has
 * no OS keyring service; a keyring backend can replace the file functions behind the same names.
 * Workers never see a key: they reach the model through the loopback proxy with a per-run token.
 */
import { existsSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ProviderName } from '../protocol/index.ts';
import { ensurePrivateDir, type StatePaths } from './paths.ts';

export function providerKeysDir(paths: StatePaths): string {
  return path.join(paths.keysDir, 'providers');
}

export function providerKeyFile(paths: StatePaths, provider: string): string {
  // The name is validated so that it can never walk out of the keys dir.
  return path.join(providerKeysDir(paths), `${ProviderName.parse(provider)}.key`);
}

/** The stored key, trimmed; null when there is none (or it is empty). */
export function readProviderKey(paths: StatePaths, provider: string): string | null {
  try {
    const key = readFileSync(providerKeyFile(paths, provider), 'utf8').trim();
    return key || null;
  } catch {
    return null;
  }
}

export function hasProviderKey(paths: StatePaths, provider: string): boolean {
  return readProviderKey(paths, provider) !== null;
}

/** Stores (atomically, born 0600) or, with null, deletes a provider key. */
export function writeProviderKey(paths: StatePaths, provider: string, key: string | null): void {
  const file = providerKeyFile(paths, provider);
  if (key === null) {
    if (existsSync(file)) unlinkSync(file);
    return;
  }
  ensurePrivateDir(paths.keysDir);
  ensurePrivateDir(providerKeysDir(paths));
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, key.trim() + '\n', { mode: 0o600 });
  renameSync(tmp, file);
}

/** What a run without a key is told: where the key goes, in words a person can act on. */
export function missingKeyGuidance(paths: StatePaths, provider: string): string {
  return (
    `no API key for provider "${provider}". Runboard keeps provider keys with its supervisor only; store it ` +
    `with \`printenv YOUR_KEY_VARIABLE | runboard key set ${provider}\` (it lands in ` +
    `${providerKeyFile(paths, provider)}, mode 0600), then run the card again`
  );
}
