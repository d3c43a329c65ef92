// `runboard key set/rm/list/check` as a user runs them: a real CLI process, its own state root and
// supervisor, the scripted model server as the provider. A key goes in on stdin and never comes out.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statePaths } from '@runboard/supervisor/paths';
import { providerKeyFile, readProviderKey } from '../../supervisor/src/common/secrets.ts';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { DIST, processesMentioning, waitUntil } from '../helpers/harness.ts';

const KEY = 'sk-cli-7d1e0c9b44a2';
let root: string;
let env: NodeJS.ProcessEnv;
let model: ModelServer;

function rb(args: string[], stdin = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [path.join(DIST, 'runboard.mjs'), ...args],
      { env },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin!.end(stdin);
  });
}

beforeAll(async () => {
  model = await startModelServer();
  root = mkdtempSync(path.join(os.tmpdir(), 'rb-cli-keys-'));
  env = {
    ...process.env,
    RUNBOARD_HOME: path.join(root, 'home'),
    RUNBOARD_PROVIDER_OPENAI_URL: model.url,
    RUNBOARD_PROVIDER_OFFLINE_URL: 'http://127.0.0.1:9',
  };
  delete env.NODE_EXTRA_CA_CERTS;
});
afterAll(async () => {
  await rb(['supervisor', 'stop', '--force']);
  await waitUntil('the supervisor to stop', () => processesMentioning(root).length === 0, 5000);
  await model.close();
  rmSync(root, { recursive: true, force: true });
});

describe('runboard key', () => {
  it('list, set (from stdin), check, rm: the key is stored 0600 by the supervisor and never printed', async () => {
    const before = await rb(['key', 'list']);
    expect(before.code).toBe(0);
    expect(before.stdout).toMatch(new RegExp(`^openai\tno key\t${model.url}$`, 'm'));

    const set = await rb(['key', 'set', 'openai'], `${KEY}\n`);
    expect(set).toMatchObject({ code: 0, stdout: 'openai: key stored\n' });
    const paths = statePaths({ RUNBOARD_HOME: env.RUNBOARD_HOME });
    expect(readProviderKey(paths, 'openai')).toBe(KEY);
    expect(statSync(providerKeyFile(paths, 'openai')).mode & 0o777).toBe(0o600);

    const list = await rb(['key', 'list']);
    expect(list.stdout).toMatch(/^openai\tkey set\t/m);
    const check = await rb(['key', 'check', 'openai']);
    expect(check.code).toBe(0);
    expect(check.stdout).toBe(`openai: key accepted: ${model.url} accepted the key\n`);
    expect(model.requests.find((r) => r.api === 'models')?.headers.authorization).toBe(`Bearer ${KEY}`);
    for (const out of [set, list, check]) expect(out.stdout + out.stderr).not.toContain(KEY);

    const rm = await rb(['key', 'rm', 'openai']);
    expect(rm).toMatchObject({ code: 0, stdout: 'openai: no key\n' });
    expect(readProviderKey(paths, 'openai')).toBeNull();
    const none = await rb(['key', 'check', 'openai']);
    expect(none.code).toBe(1);
    expect(none.stdout).toMatch(/key not checked: no key is stored for provider "openai"/);
  });

  it('a provider that cannot be reached, an empty stdin, a missing provider: each said in plain words', async () => {
    await rb(['key', 'set', 'offline'], 'sk-offline\n');
    const offline = await rb(['key', 'check', 'offline']);
    expect(offline.code).toBe(1);
    expect(offline.stdout).toMatch(
      /offline: key not checked: saved; could not check: are you offline\? \(cannot reach http:\/\/127\.0\.0\.1:9: ECONNREFUSED\)/,
    );
    const empty = await rb(['key', 'set', 'openai'], '');
    expect(empty.code).not.toBe(0);
    expect(empty.stderr).toMatch(/no key on stdin/);
    const bare = await rb(['key', 'set']);
    expect(bare.code).not.toBe(0);
    expect(bare.stderr).toMatch(/key takes set <provider>, rm <provider>, check <provider> or list/);
  });
});
