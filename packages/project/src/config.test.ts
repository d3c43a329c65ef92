import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  configRows,
  loadEffectiveConfig,
  MIGRATIONS,
  migrateConfigText,
  parseConfig,
  resolveConfig,
  sourceOf,
  upgradeConfigFile,
  userConfigPath,
} from './config.ts';
import { flowProvider, flowSpec, launchParams, visionProfileOf } from './flow-spec.ts';
import { CONFIG_VERSION } from './project.ts';

const project = (text: string) => ({ file: '/p/config.yaml', text });
const user = (text: string) => ({ file: '/home/u/.config/runboard/config.yaml', text });

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});
const tmp = (): string => {
  const d = mkdtempSync(path.join(os.tmpdir(), 'rb-config-'));
  dirs.push(d);
  return d;
};

describe('layered config', () => {
  it('defaults ← user ← project, key by key, each value saying where it came from', () => {
    const eff = resolveConfig(
      project('version: 2\nflows:\n  impl: { runner: codex, cap: 3 }\n'),
      user(
        'version: 2\nscheduler:\n  maxConcurrency: 6\n  backoff: { retries: 2 }\nflows:\n  impl: { runner: codex, model: gpt-x, cap: 1 }\n',
      ),
    );
    expect(eff.config.scheduler.maxConcurrency).toBe(6);
    expect(eff.config.scheduler.backoff).toEqual({ base: 2000, max: 300_000, retries: 2 });
    expect(eff.config.flows.impl).toMatchObject({ runner: 'codex', model: 'gpt-x', cap: 3 });
    expect(sourceOf(eff.sources, 'scheduler.maxConcurrency')).toEqual({
      layer: 'user',
      file: '/home/u/.config/runboard/config.yaml',
    });
    expect(sourceOf(eff.sources, 'scheduler.backoff.base')).toEqual({ layer: 'default' });
    expect(sourceOf(eff.sources, 'flows.impl.cap')).toEqual({ layer: 'project', file: '/p/config.yaml' });
    expect(sourceOf(eff.sources, 'flows.impl.model').layer).toBe('user');
    expect(eff.warnings).toEqual([]);
  });

  it('the version a file sets is labelled with that file, not as a default', () => {
    const eff = resolveConfig(project('version: 2\nflows:\n  a: { runner: command }\n'), user('flows: {}\n'));
    expect(sourceOf(eff.sources, 'version')).toEqual({ layer: 'project', file: '/p/config.yaml' });
    const none = resolveConfig(project('version: 2\n'), null);
    expect(configRows(none).find((r) => r.key === 'version')?.source.layer).toBe('project');
  });

  it('a bad user-config value that the project overrides is still reported (other projects read it)', () => {
    const eff = resolveConfig(
      project('version: 2\nscheduler: { maxConcurrency: 4 }\nflows:\n  a: { runner: command }\n'),
      user('version: 2\nscheduler: { maxConcurrency: lots }\n'),
    );
    expect(eff.config.scheduler.maxConcurrency).toBe(4);
    expect(eff.warnings).toEqual([
      expect.stringMatching(
        /^\/home\/u\/\.config\/runboard\/config\.yaml: scheduler\.maxConcurrency: .*number.*: this project's config\.yaml overrides it, but a project that does not would fail: fix it there$/,
      ),
    ]);
  });

  it('flows select named profiles from the user config; the flow’s own values win', () => {
    const cfg = parseConfig(
      '/p/config.yaml',
      'version: 2\nflows:\n  a: { runner: codex, profile: fast }\n  b: { runner: codex, profile: fast, model: own }\n  look: { runner: command, visionProfile: eyes }\n',
      user(
        'version: 2\nllm_profiles:\n  fast: { provider: openai, model: gpt-fast }\nvision_profiles:\n  eyes: { provider: anthropic, model: claude-eyes }\n',
      ),
    );
    expect(flowSpec('a', cfg.flows.a!, '/p', cfg)).toMatchObject({ provider: 'openai', model: 'gpt-fast' });
    expect(flowSpec('b', cfg.flows.b!, '/p', cfg)).toMatchObject({ provider: 'openai', model: 'own' });
    expect(visionProfileOf(cfg, 'look')).toEqual({ provider: 'anthropic', model: 'claude-eyes' });
    // the run gets it (analyze_media); a flow without one gets none
    expect(flowSpec('look', cfg.flows.look!, '/p', cfg).vision).toEqual({
      profile: 'eyes',
      provider: 'anthropic',
      model: 'claude-eyes',
    });
    expect(flowSpec('a', cfg.flows.a!, '/p', cfg).vision).toBeUndefined();
    expect(() => visionProfileOf(cfg, 'a')).toThrow(/no vision profile for flow "a": add `visionProfile/);
    const stub = parseConfig(
      '/p/config.yaml',
      'version: 2\nvision_profiles:\n  eyes: { provider: openai, model: "<your vision model>" }\nflows:\n  look: { runner: command, visionProfile: eyes }\n',
    );
    expect(() => visionProfileOf(stub, 'look')).toThrow(
      /vision profile "eyes" \(flow "look"\) still has a placeholder model: "<your vision model>"; set the real/,
    );
  });

  it('says which file and key is wrong, and what to do', () => {
    expect(() =>
      resolveConfig(
        project('version: 2\nflows: {}\n'),
        user('version: 2\nscheduler: { maxConcurrency: 0 }\n'),
      ),
    ).toThrow(
      /^\/home\/u\/\.config\/runboard\/config\.yaml: invalid config: scheduler\.maxConcurrency: .*set in your user config/,
    );
    expect(() =>
      resolveConfig(project('version: 2\nflows:\n  a: { runner: codex, profile: nope }\n'), null),
    ).toThrow(
      /^\/p\/config\.yaml: invalid config: flows\.a\.profile: no llm_profiles entry "nope".*add it to your user config/,
    );
    expect(() => resolveConfig(project('version: 2\nflows: {}\n'), user('- a list\n'))).toThrow(
      /your user config must be a mapping/,
    );
    expect(() => resolveConfig(project('version: 2\nflows: [\n'), null)).toThrow(
      /^\/p\/config\.yaml: config\.yaml is not valid YAML/,
    );
  });

  it('a file newer than this Runboard is read as far as it is understood, with a warning', () => {
    const eff = resolveConfig(
      project(
        `version: ${CONFIG_VERSION + 1}\nteleport: { enabled: true }\nflows:\n  a: { runner: command }\n`,
      ),
      null,
    );
    expect(eff.config.flows.a?.runner).toBe('command');
    expect(eff.warnings[0]).toMatch(
      /version 3 is newer than this Runboard understands \(2\).*update Runboard/,
    );
  });

  it('the user config lives under RUNBOARD_HOME when set, else in the XDG config dir', () => {
    expect(userConfigPath({ RUNBOARD_HOME: '/s' })).toBe('/s/config.yaml');
    expect(userConfigPath({ XDG_CONFIG_HOME: '/x' })).toBe('/x/runboard/config.yaml');
    expect(userConfigPath({ RUNBOARD_USER_CONFIG: '/u.yaml', RUNBOARD_HOME: '/s' })).toBe('/u.yaml');
    const dir = tmp();
    mkdirSync(path.join(dir, 'xdg', 'runboard'), { recursive: true });
    writeFileSync(path.join(dir, 'xdg', 'runboard', 'config.yaml'), 'scheduler: { maxConcurrency: 9 }\n');
    writeFileSync(path.join(dir, 'config.yaml'), 'version: 2\nflows: {}\n');
    const eff = loadEffectiveConfig(dir, { XDG_CONFIG_HOME: path.join(dir, 'xdg') });
    expect(eff.config.scheduler.maxConcurrency).toBe(9);
    expect(eff.files.userExists).toBe(true);
  });
});

describe('config warnings and origins', () => {
  it('unknown keys are named with their file; old flow key names are read as the new ones', () => {
    const eff = resolveConfig(
      project(
        'version: 2\nschedular: { maxConcurrency: 2 }\nflows:\n  look: { runner: command, vision_profile: eyes, timout: 5s }\n',
      ),
      user('version: 2\nvision_profiles:\n  eyes: { provider: openai, model: gpt-eyes, colour: red }\n'),
    );
    expect(eff.config.flows.look?.visionProfile).toBe('eyes');
    expect(eff.warnings).toEqual([
      '/p/config.yaml: flows.look.vision_profile is an old name: write visionProfile (read as that for now)',
      expect.stringMatching(
        /^\/home\/u\/\.config\/runboard\/config\.yaml: vision_profiles\.eyes\.colour is not a key/,
      ),
      expect.stringMatching(/^\/p\/config\.yaml: flows\.look\.timout is not a key/),
      expect.stringMatching(
        /^\/p\/config\.yaml: schedular is not a key this Runboard knows, so it is ignored/,
      ),
    ]);
    // both names: the new one holds, the old one is named as ignored
    const both = resolveConfig(
      project('version: 2\nflows:\n  a: { runner: codex, llm_profile: x, profile: fast }\n'),
      user('version: 2\nllm_profiles:\n  fast: { provider: openai }\n'),
    );
    expect(both.config.flows.a?.profile).toBe('fast');
    expect(both.warnings).toEqual([
      '/p/config.yaml: flows.a.llm_profile is ignored: flows.a.profile is given too; remove llm_profile',
    ]);
  });

  it('a profile still holding a placeholder is a warning before any run needs it', () => {
    const eff = resolveConfig(
      project('version: 2\nflows: {}\n'),
      user('version: 2\nvision_profiles:\n  glm: { provider: zhipu, model: "<your vision model>" }\n'),
    );
    expect(eff.warnings).toEqual([
      '/home/u/.config/runboard/config.yaml: vision_profiles.glm.model is still a placeholder ("<your vision model>"): set the real model before a flow uses profile glm',
    ]);
  });

  it('a Redis password in redis.url is a warning saying how to keep it apart; a named secret is not', () => {
    const warned = resolveConfig(
      project('version: 2\nflows: {}\n'),
      user('version: 2\nredis: { url: "rediss://board:s3cret@redis.internal:6380" }\n'),
    );
    expect(warned.warnings).toEqual([
      expect.stringMatching(
        /redis\.url holds a password in clear: store it with `runboard fleet password set NAME`/,
      ),
    ]);
    const named = resolveConfig(
      project('version: 2\nflows: {}\n'),
      user('version: 2\nredis: { url: "rediss://board@redis.internal:6380", passwordSecret: fleet }\n'),
    );
    expect(named.warnings).toEqual([]);
    expect(named.config.redis).toEqual({
      url: 'rediss://board@redis.internal:6380',
      passwordSecret: 'fleet',
    });
    expect(() =>
      resolveConfig(
        project('version: 2\nflows: {}\nredis: { url: "redis://h", passwordSecret: "../x" }\n'),
        null,
      ),
    ).toThrow(/passwordSecret is a name/);
  });

  it("rows list a flow's provider and model from its profile, after the flow's own values", () => {
    const eff = resolveConfig(
      project('version: 2\nflows:\n  a: { runner: codex, profile: fast, model: own }\n'),
      user('version: 2\nllm_profiles:\n  fast: { provider: openai, model: gpt-fast }\n'),
    );
    const rows = configRows(eff).filter((r) => r.key.startsWith('flows.a.'));
    expect(rows.find((r) => r.key === 'flows.a.model')).toEqual({
      key: 'flows.a.model',
      value: 'own',
      source: { layer: 'project', file: '/p/config.yaml' },
    });
    expect(rows.find((r) => r.key === 'flows.a.provider')).toEqual({
      key: 'flows.a.provider',
      value: 'openai',
      source: { layer: 'profile', profile: 'fast', file: '/home/u/.config/runboard/config.yaml' },
    });
    expect(rows.filter((r) => r.key === 'flows.a.model')).toHaveLength(1);
    // the provider whose key the flow's runs need (the board's Providers and its wait for a key)
    expect(flowProvider(eff.config.flows.a!, eff.config)).toBe('openai');
  });
});

describe('config migrations', () => {
  it('v1 → v2: a project file only changes its version; a user file gains the profile maps', () => {
    const doc = migrateConfigText('version: 1\nflows: {}\n', 'project');
    expect(doc).toBe('version: 2\nflows: {}\n');
    const u = migrateConfigText('version: 1\nscheduler: {maxConcurrency: 2}   # mine\n', 'user');
    expect(u).toMatch(/^version: 2\nscheduler: \{maxConcurrency: 2\} {3}# mine\n# Named profiles/);
    expect(u).toMatch(/llm_profiles: \{\}/);
    expect(u).toMatch(/vision_profiles: \{\}/);
    expect(Object.keys(MIGRATIONS).map(Number)).toEqual([1]); // one step per older version
  });

  it('never overwrites what the person set', () => {
    const u = migrateConfigText('version: 1\nllm_profiles:\n  mine: { model: m }\n', 'user');
    expect(u).toContain('mine: { model: m }');
    expect(u.match(/llm_profiles/g)).toHaveLength(1);
  });

  it('upgrades an older file in place, keeping comments and layout', () => {
    const dir = tmp();
    const file = path.join(dir, 'config.yaml');
    const text =
      '# my board\nversion: 1 # the format\nscheduler:\n  maxConcurrency: 3    # all flows\nflows:\n  shell: {runner: command, cap: 2} # keep me\n\n  # later\n';
    writeFileSync(file, text);
    expect(upgradeConfigFile(file, 'project')).toEqual({ from: 1, to: 2 });
    expect(readFileSync(file, 'utf8')).toBe(text.replace('version: 1 #', 'version: 2 #'));
    expect(upgradeConfigFile(file, 'project')).toBeNull();
    // read as v2 before it was written, with a note saying how to write it
    const eff = resolveConfig({ file, text }, null);
    expect(eff.warnings[0]).toMatch(/version 1 is older.*runboard config --upgrade/);
  });
});

describe('budgets and prices', () => {
  it("a flow's maxTokens/maxCost and the config's prices reach the FlowSpec; a card's own budget wins", () => {
    const cfg = parseConfig(
      '/p/config.yaml',
      'version: 2\nprices:\n  my-model: { input: 1, output: 2 }\nproviders:\n  openai: { maxConcurrent: 3 }\nflows:\n  cu: { runner: computer-use, provider: openai, model: my-model, maxTokens: 5000, maxCost: 0.5 }\n',
    );
    expect(cfg.providers).toEqual({ openai: { maxConcurrent: 3 } });
    expect(flowSpec('cu', cfg.flows.cu!, '/p', cfg)).toMatchObject({
      budget: { maxTokens: 5000, maxCost: 0.5 },
      prices: { 'my-model': { input: 1, output: 2 } },
    });
    const card = {
      file: '/p/cards/a.md',
      front: { title: 'a', flow: 'cu', maxTokens: 100 },
      body: '',
      workspace: '/p',
    };
    const grant = { path: '/p', token: 'x' } as never;
    expect(launchParams(card, cfg, '/p', grant).flow.budget).toEqual({ maxTokens: 100, maxCost: 0.5 });
  });

  it('a bad budget says what is wrong', () => {
    expect(() =>
      parseConfig('/p/config.yaml', 'version: 2\nflows:\n  cu: { runner: computer-use, maxCost: -1 }\n'),
    ).toThrow(/maxCost/);
  });
});

describe('attempts and setup (issue 33)', () => {
  const cu = (extra: string): string =>
    `version: 2\nflows:\n  d: { runner: computer-use, provider: openai, cap: 3, ${extra} }\n`;
  it('attempts above 1 need a computer-use or replay flow on private displays; judgeAfter is a duration', () => {
    const c = resolveConfig(
      project(cu('attempts: 3, judgeAfter: 2m, computerUse: { privateDisplay: true }')),
      null,
    );
    expect(c.config.flows.d).toMatchObject({ attempts: 3, judgeAfter: 120_000 });
    expect(() => resolveConfig(project(cu('attempts: 3')), null)).toThrow(
      /flows\.d\.attempts: attempts run side by side, each on its own display/,
    );
    expect(() =>
      resolveConfig(project('version: 2\nflows:\n  s: { runner: command, attempts: 2 }\n'), null),
    ).toThrow(/computer-use or replay flow/);
    expect(() =>
      resolveConfig(project(cu('attempts: 17, computerUse: { privateDisplay: true }')), null),
    ).toThrow(/attempts/);
  });

  it("a card's setup: goes to its run's private display; a flow without one says what to do", () => {
    const grant = { id: 'g', path: '/w', createdAt: '', signature: '' } as never;
    const card = (setup: string) => ({
      file: '/p/cards/c.md',
      front: { title: 't', flow: 'd', setup },
      body: '',
      workspace: '/w',
    });
    const on = resolveConfig(project(cu('computerUse: { privateDisplay: true }')), null).config;
    expect(launchParams(card('app &'), on, '/p', grant).flow.computerUse?.setup).toBe('app &');
    const off = resolveConfig(
      project('version: 2\nflows:\n  d: { runner: computer-use, provider: openai }\n'),
      null,
    ).config;
    expect(() => launchParams(card('app &'), off, '/p', grant)).toThrow(
      /setup: runs on a private display .*set computerUse\.privateDisplay: true/,
    );
  });
});
