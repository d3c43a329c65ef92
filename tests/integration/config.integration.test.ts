// The layered config as a user meets it: `runboard config` (the effective config, where each value came
// from, upgrades that keep comments, errors naming the file) and a run that takes a value from the user
// config. Real processes, files and supervisor; the user config lives under the test's RUNBOARD_HOME.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliOutcome, processesMentioning, runboardCli, waitUntil } from '../helpers/harness.ts';

let root: string;
let env: NodeJS.ProcessEnv;
let project: string;
let userFile: string;

const rb = (args: string[]): Promise<CliOutcome> => runboardCli(args, { env, cwd: project });

const PROJECT = `# the team's board
version: 1 # the format
flows:
  shell: { runner: command, cap: 2 } # quick jobs
`;

beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rb-config-'));
  env = { ...process.env, RUNBOARD_HOME: path.join(root, 'home') };
  delete env.NODE_EXTRA_CA_CERTS;
  project = path.join(root, 'project');
  mkdirSync(path.join(project, 'cards'), { recursive: true });
  mkdirSync(path.join(root, 'home'));
  userFile = path.join(root, 'home', 'config.yaml');
  writeFileSync(path.join(project, 'config.yaml'), PROJECT);
});

afterAll(async () => {
  await rb(['supervisor', 'stop', '--force']);
  await waitUntil('no leftover processes', () => processesMentioning(root).length === 0, 8000);
  rmSync(root, { recursive: true, force: true });
});

describe('runboard config', () => {
  it('shows the effective config and where each value came from', async () => {
    writeFileSync(
      userFile,
      '# mine\nversion: 2\nscheduler: { maxConcurrency: 7 }\nflows:\n  shell: { env: { GREETING: from-user }, cap: 9 }\nllm_profiles:\n  fast: { provider: openai, model: gpt-fast }\n',
    );
    const shown = await rb(['config', '--show']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`# user:    ${userFile}`);
    expect(shown.stdout).toMatch(/maxConcurrency: 7 # user\n/);
    expect(shown.stdout).toMatch(/base: 2000 # default\n/);
    expect(shown.stdout).toMatch(/runner: command # project\n/);
    expect(shown.stdout).toMatch(/cap: 2 # project\n/); // the project wins over the user
    expect(shown.stdout).toMatch(/GREETING: from-user # user\n/);
    expect(shown.stderr).toMatch(/version 1 is older.*`runboard config --upgrade`/);
    const json = JSON.parse((await rb(['config', '--json'])).stdout) as {
      config: { flows: { shell: { cap: number } } };
      sources: Record<string, { layer: string; file?: string }>;
    };
    expect(json.config.flows.shell.cap).toBe(2);
    expect(json.sources['llm_profiles.fast.model']).toEqual({ layer: 'user', file: userFile });
    expect(json.sources['scheduler.backoff.retries']).toEqual({ layer: 'default' });

    // a flow's provider and model from its profile: shown as such, and as layer profile in --json
    const before = readFileSync(userFile, 'utf8');
    writeFileSync(
      userFile,
      `${before.replace('flows:\n', 'flows:\n  look: { runner: command, profile: fast, model: own }\n')}`,
    );
    const withProfile = await rb(['config', '--show']);
    expect(withProfile.stdout).toMatch(
      /model: own # user\n\s+profile: fast # user\n\s+provider: openai # profile fast\n/,
    );
    const j2 = JSON.parse((await rb(['config', '--json'])).stdout) as {
      sources: Record<string, { layer: string; file?: string; profile?: string }>;
    };
    expect(j2.sources['flows.look.provider']).toEqual({ layer: 'profile', profile: 'fast', file: userFile });
    writeFileSync(userFile, before);
  });

  it('a run takes what the user config sets for its flow', async () => {
    mkdirSync(path.join(root, 'ws'), { recursive: true });
    expect((await rb(['grant', path.join(root, 'ws')])).code).toBe(0);
    const card = path.join(project, 'cards', 'hello.md');
    writeFileSync(
      card,
      '---\ntitle: hello\nflow: shell\nworkspace: ../ws\ncommand: "echo greeting=$GREETING"\n---\n',
    );
    const r = await rb(['run', card]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('greeting=from-user');
  });

  it('upgrades an older file in place, keeping its comments; a bad file is named with what to fix', async () => {
    const up = await rb(['config', '--upgrade']);
    expect(up.stdout).toContain(`${path.join(project, 'config.yaml')}: upgraded from version 1 to 2`);
    expect(up.stdout).toContain(`${userFile}: up to date`);
    expect(readFileSync(path.join(project, 'config.yaml'), 'utf8')).toBe(
      PROJECT.replace('version: 1 #', 'version: 2 #'),
    );
    expect((await rb(['config'])).stderr).toBe('');

    writeFileSync(userFile, 'version: 2\nscheduler: { maxConcurrency: lots }\n');
    const bad = await rb(['config', '--show']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      new RegExp(
        `^runboard: ${userFile.replace(/[.]/g, '\\.')}: invalid config: scheduler\\.maxConcurrency: .*set in your user config`,
      ),
    );
    writeFileSync(userFile, 'version: 9\nflows:\n  shell: { hovercraft: true }\n');
    const newer = await rb(['config']);
    expect(newer.code).toBe(0);
    expect(newer.stderr).toMatch(/version 9 is newer than this Runboard understands \(2\).*update Runboard/);
  });
});
