/**
 * Provider keys, held by the supervisor only (shared/DESIGN.md, "Secrets"). One 0600 file per provider
 * under the state root's keys dir (0700): `<root>/keys/providers/<provider>.key`. This machine class has
 * no OS keyring service; a keyring backend can replace the file functions behind the same names.
 * Workers never see a key: they reach the model through the loopback proxy with a per-run token.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import YAML from 'yaml';
import { PARAM_SECRET_REF, paramSecretRefs, ProviderName } from '../protocol/index.ts';
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

// ── Sensitive workflow parameters (issue 30) ──
// A replay card's sensitive parameter (a PIN, a password) is never written in clear into the card, the
// run's log or its artifacts: the board hands the value to the supervisor, which keeps it here, one
// 0600 file per value under `<root>/keys/params/` (0700), and the card keeps only its reference
// (`params: { pin: { secret: s-… } }`). The value is bound to the card file and the parameter it was
// given for: only a run of that card gets it (in its spec, in memory), so a reference copied into
// another card gives nothing.

export interface ParamSecret {
  /** The card file (absolute) the value was given for. */
  card: string;
  param: string;
  value: string;
}

export function paramSecretsDir(paths: StatePaths): string {
  return path.join(paths.keysDir, 'params');
}

function paramSecretFile(paths: StatePaths, ref: string): string {
  if (!PARAM_SECRET_REF.test(ref)) throw new Error(`not a secret reference: ${JSON.stringify(ref)}`);
  return path.join(paramSecretsDir(paths), `${ref}.json`);
}

/** Stores a value (atomically, born 0600) under a new reference, which it returns. */
export function writeParamSecret(paths: StatePaths, s: ParamSecret): string {
  ensurePrivateDir(paths.keysDir);
  ensurePrivateDir(paramSecretsDir(paths));
  const ref = `s-${randomBytes(16).toString('hex')}`;
  const file = paramSecretFile(paths, ref);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(s), { mode: 0o600 });
  renameSync(tmp, file);
  return ref;
}

/** Removes a stored value (nothing when there is none or the reference is malformed). */
export function deleteParamSecret(paths: StatePaths, ref: string): void {
  if (!PARAM_SECRET_REF.test(ref)) return;
  rmSync(paramSecretFile(paths, ref), { force: true });
}

/** A stored value, off the event loop; null when there is none or it cannot be read. */
export async function readParamSecret(paths: StatePaths, ref: string): Promise<ParamSecret | null> {
  if (!PARAM_SECRET_REF.test(ref)) return null;
  try {
    const s = JSON.parse(await readFile(paramSecretFile(paths, ref), 'utf8')) as Partial<ParamSecret>;
    return typeof s.card === 'string' && typeof s.param === 'string' && typeof s.value === 'string'
      ? { card: s.card, param: s.param, value: s.value }
      : null;
  } catch {
    return null;
  }
}

/**
 * The sensitive parameter values a run of the card gets: each reference of its `params:` whose stored
 * value was given for this card file and this parameter. Read off the event loop; a card that cannot
 * be read gives none (the run then asks for the values it misses).
 */
export async function cardParamSecrets(paths: StatePaths, cardPath: string): Promise<Record<string, string>> {
  let front: unknown;
  try {
    const m = /^---\r?\n([\s\S]*?)\r?\n---/.exec(await readFile(cardPath, 'utf8'));
    front = m ? YAML.parse(m[1]!) : undefined;
  } catch {
    return {};
  }
  const refs = paramSecretRefs((front as { params?: unknown } | undefined)?.params);
  const out: Record<string, string> = {};
  await Promise.all(
    Object.entries(refs).map(async ([param, ref]) => {
      const s = await readParamSecret(paths, ref);
      if (s && s.card === cardPath && s.param === param) out[param] = s.value;
    }),
  );
  return out;
}

/**
 * A fleet's Redis password, kept like a provider key (0600 under the keys dir, 0700), by a name the
 * config and `fleet join` use instead of the password itself: `<root>/keys/redis/<name>.secret`.
 */
export const REDIS_SECRET_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export function redisPasswordFile(paths: StatePaths, name: string): string {
  if (!REDIS_SECRET_NAME.test(name))
    throw new Error(
      `"${name}" is not a Redis password name: use lower-case letters, digits, - and _ (e.g. fleet)`,
    );
  return path.join(paths.keysDir, 'redis', `${name}.secret`);
}

/** The stored Redis password named `name`, or null when none is stored. */
export function readRedisPassword(paths: StatePaths, name: string): string | null {
  try {
    return readFileSync(redisPasswordFile(paths, name), 'utf8').replace(/\r?\n$/, '') || null;
  } catch {
    return null;
  }
}

/** Stores (atomically, born 0600) or, with null, deletes the Redis password named `name`. */
export function writeRedisPassword(paths: StatePaths, name: string, password: string | null): void {
  const file = redisPasswordFile(paths, name);
  if (password === null) {
    if (existsSync(file)) unlinkSync(file);
    return;
  }
  ensurePrivateDir(paths.keysDir);
  ensurePrivateDir(path.dirname(file));
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, password + '\n', { mode: 0o600 });
  renameSync(tmp, file);
}

/** What a supervisor says when the config names a Redis password that is not stored. */
export function missingRedisPassword(paths: StatePaths, name: string): string {
  return `no Redis password stored as "${name}": store it with \`runboard fleet password set ${name}\` (reads it from stdin; it lands in ${redisPasswordFile(paths, name)}, mode 0600)`;
}
