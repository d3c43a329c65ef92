/**
 * The layered config: built-in defaults, under the user's config (`$XDG_CONFIG_HOME/runboard/config.yaml`),
 * under the project's `config.yaml`. Later layers win key by key (maps are merged, lists and values
 * replaced); the merged result is checked once (project.ts), and an error names the file the bad value
 * came from. Every value's origin is kept, for `runboard config --show` and the board's Settings.
 *
 * Each file carries a `version`. An older file is migrated, one step function per version (v1 → v2 → …),
 * on the parsed YAML document, so that `upgradeConfigFile` can write it back with the person's comments
 * and layout kept and nothing of theirs overwritten. A newer file than this Runboard is read as far as
 * it is understood, with a warning.
 */
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML, { isMap, type Document, type Scalar, type YAMLMap } from 'yaml';
import type { z } from 'zod';
import { CONFIG_VERSION, isPlaceholder, MAX_BACKOFF_MS, ProjectConfig, ProjectError } from './project.ts';
import { readRegularFileSync, rewriteInPlaceSync } from '@runboard/native/regular-file';

/** Where a value came from: a file's layer, or (`profile`) the named profile a flow selects. */
export type ConfigLayer = 'default' | 'user' | 'project' | 'profile';
/** Which file (and, for a profile's value, which profile) a config value came from. */
export interface ConfigSource {
  layer: ConfigLayer;
  file?: string;
  /** layer `profile`: the `llm_profiles` entry the flow selects. */
  profile?: string;
}
export type ConfigKind = 'user' | 'project';
export interface ConfigText {
  file: string;
  text: string;
}

export interface EffectiveConfig {
  config: ProjectConfig;
  /** Dotted key path (e.g. `scheduler.maxConcurrency`, `flows.impl.cap`) → where it came from. */
  sources: Record<string, ConfigSource>;
  /**
   * What the person should know: a file newer than this Runboard, a file that needs upgrading, an old
   * key name, a key this Runboard does not know, a profile still holding a template's placeholder.
   */
  warnings: string[];
  files: { user: string; project: string; userExists: boolean };
}

/** The built-in layer: what holds when neither file says otherwise (per-flow defaults are in the schema). */
export const BUILTIN_DEFAULTS = {
  version: CONFIG_VERSION,
  scheduler: {
    maxConcurrency: 4,
    backend: 'local',
    backoff: { base: 2000, max: MAX_BACKOFF_MS, retries: 0 },
    columnLimits: {},
  },
  llm_profiles: {},
  vision_profiles: {},
  flows: {},
} as const;

/**
 * The user's config file: $RUNBOARD_USER_CONFIG when set; under $RUNBOARD_HOME when that is set (a
 * second instance, the tests: nothing of the person's own config leaks in); else the XDG config dir.
 */
export function userConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.RUNBOARD_USER_CONFIG) return path.resolve(env.RUNBOARD_USER_CONFIG);
  if (env.RUNBOARD_HOME) return path.join(path.resolve(env.RUNBOARD_HOME), 'config.yaml');
  const base = env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config');
  return path.join(base, 'runboard', 'config.yaml');
}

/** The user's config, or null when there is none. */
export function readUserConfig(env: NodeJS.ProcessEnv = process.env): ConfigText | null {
  const file = userConfigPath(env);
  try {
    return { file, text: readRegularFileSync(file) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new ProjectError(file, `cannot read your user config: ${(err as Error).message}`);
  }
}

/**
 * The migration steps: `MIGRATIONS[n]` turns a version-n document into a version n+1 one, in place. A
 * step only adds what the new version introduced and renames what it renamed; it never overwrites a
 * value the person set.
 */
export const MIGRATIONS: Record<number, (doc: Document, kind: ConfigKind) => void> = {
  // v2: named model and vision profiles (llm_profiles, vision_profiles), selected by flows; the user config.
  1: (doc, kind) => {
    if (kind !== 'user') return;
    for (const key of ['llm_profiles', 'vision_profiles'] as const) {
      if (doc.has(key)) continue;
      const pair = doc.createPair(key, {});
      if (key === 'llm_profiles')
        (pair.key as Scalar).commentBefore = ' Named profiles that flows select (profile:, visionProfile:)';
      (doc.contents as YAMLMap).items.push(pair);
    }
  },
};

interface Migrated {
  doc: Document;
  /** The file's own version (undefined: it has none). */
  from: number | undefined;
  changed: boolean;
}

function parseDocument(src: ConfigText, what: string): Document {
  const doc = YAML.parseDocument(src.text, { prettyErrors: true });
  if (doc.errors.length)
    throw new ProjectError(src.file, `${what} is not valid YAML: ${doc.errors[0]!.message}`);
  if (doc.contents !== null && !isMap(doc.contents))
    throw new ProjectError(src.file, `${what} must be a mapping of keys (version:, flows:, …)`);
  return doc;
}

/** Brings a document to CONFIG_VERSION (in memory); older versions step by step. */
function migrate(src: ConfigText, kind: ConfigKind, warnings: string[]): Migrated {
  const what = kind === 'user' ? 'your user config' : 'config.yaml';
  const doc = parseDocument(src, what);
  const raw = doc.get('version');
  if (raw === undefined) {
    if (kind === 'project')
      throw new ProjectError(
        src.file,
        `invalid config: version: missing; put \`version: ${CONFIG_VERSION}\` at the top`,
      );
    return { doc, from: undefined, changed: false };
  }
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 1)
    throw new ProjectError(
      src.file,
      `invalid config: version: expected a whole number such as ${CONFIG_VERSION} (got ${JSON.stringify(raw)})`,
    );
  if (raw > CONFIG_VERSION) {
    warnings.push(
      `${src.file}: version ${raw} is newer than this Runboard understands (${CONFIG_VERSION}); it is read as far as it is understood (unknown keys are ignored): update Runboard`,
    );
    return { doc, from: raw, changed: false };
  }
  for (let v = raw; v < CONFIG_VERSION; v++) {
    MIGRATIONS[v]!(doc, kind);
    doc.set('version', v + 1);
  }
  return { doc, from: raw, changed: raw < CONFIG_VERSION };
}

type Plain = Record<string, unknown>;
const isPlain = (v: unknown): v is Plain => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Merges `over` into `base` (maps key by key, the rest replaced), noting each value's origin. */
function mergeLayer(
  base: Plain,
  over: Plain,
  source: ConfigSource,
  sources: Record<string, ConfigSource>,
  prefix = '',
): Plain {
  const out: Plain = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (isPlain(v)) {
      // a map is merged key by key; it comes from the first layer that had it
      if (!isPlain(base[k])) {
        for (const p of Object.keys(sources)) if (p.startsWith(`${key}.`)) delete sources[p];
        sources[key] = source;
      }
      out[k] = mergeLayer(isPlain(base[k]) ? base[k] : {}, v, source, sources, key);
    } else {
      out[k] = v;
      sources[key] = source;
      for (const p of Object.keys(sources)) if (p.startsWith(`${key}.`)) delete sources[p];
    }
  }
  return out;
}

/** The most specific origin of a dotted path (its own, else its nearest parent's, else the defaults). */
export function sourceOf(sources: Record<string, ConfigSource>, key: string): ConfigSource {
  for (let k = key; k; k = k.includes('.') ? k.slice(0, k.lastIndexOf('.')) : '') {
    const s = sources[k];
    if (s) return s;
  }
  return { layer: 'default' };
}

/** One value of the effective config: its dotted key, the value and the layer it came from. */
export interface ConfigRow {
  key: string;
  value: unknown;
  source: ConfigSource;
}

/**
 * Every value of the effective config (values, lists, empty maps) with its origin, for display; a
 * flow's provider and model that its profile (`profile:`) gives come after the flow's own values, as
 * from layer `profile`.
 */
export function configRows(eff: EffectiveConfig): ConfigRow[] {
  const out: ConfigRow[] = [];
  const walk = (value: unknown, key: string): void => {
    if (isPlain(value) && Object.keys(value).length) {
      for (const [k, v] of Object.entries(value)) walk(v, key ? `${key}.${k}` : k);
    } else if (key) out.push({ key, value, source: sourceOf(eff.sources, key) });
  };
  walk(eff.config, '');
  for (const [flow, f] of Object.entries(eff.config.flows)) {
    const name = f.profile;
    if (name === undefined || !Object.hasOwn(eff.config.llm_profiles, name)) continue;
    const profile = eff.config.llm_profiles[name]!;
    for (const k of ['provider', 'model'] as const) {
      if (f[k] !== undefined || profile[k] === undefined) continue;
      const file = sourceOf(eff.sources, `llm_profiles.${name}.${k}`).file;
      out.push({
        key: `flows.${flow}.${k}`,
        value: profile[k],
        source: { layer: 'profile', profile: name, ...(file ? { file } : {}) },
      });
    }
  }
  return out;
}

function describeSource(s: ConfigSource): string {
  if (s.layer === 'default') return 'the built-in defaults';
  if (s.layer === 'profile') return `profile ${s.profile} in ${s.file ?? 'the built-in defaults'}`;
  return `${s.layer === 'user' ? 'your user config' : 'config.yaml'} ${s.file}`;
}

function zodIssues(err: z.ZodError, sources: Record<string, ConfigSource>, project: string): string {
  const byFile = new Map<string, string[]>();
  for (const i of err.issues) {
    const key = i.path.map(String).join('.');
    const s = sourceOf(sources, key);
    const file = s.layer === 'default' ? project : s.file!;
    const line = `${key ? key + ': ' : ''}${i.message}${s.layer === 'user' ? ` (set in ${describeSource(s)})` : ''}`;
    byFile.set(file, [...(byFile.get(file) ?? []), line]);
  }
  return [...byFile.entries()].map(([, lines]) => lines.join('; ')).join('; ');
}

/** Old key names of a flow that are still read, as the new name (the seed's names among them). */
export const DEPRECATED_FLOW_KEYS: Record<string, string> = {
  vision_profile: 'visionProfile',
  llm_profile: 'profile',
};

/** Reads a layer's old flow key names as the new ones (unless both are given), with a warning each. */
function renameDeprecated(data: Plain, file: string, warnings: string[]): void {
  const flows = data.flows;
  if (!isPlain(flows)) return;
  for (const [name, flow] of Object.entries(flows)) {
    if (!isPlain(flow)) continue;
    for (const [old, now] of Object.entries(DEPRECATED_FLOW_KEYS)) {
      if (!Object.hasOwn(flow, old)) continue;
      if (Object.hasOwn(flow, now)) {
        warnings.push(
          `${file}: flows.${name}.${old} is ignored: flows.${name}.${now} is given too; remove ${old}`,
        );
      } else {
        flow[now] = flow[old];
        warnings.push(`${file}: flows.${name}.${old} is an old name: write ${now} (read as that for now)`);
      }
      delete flow[old];
    }
  }
}

/** Keys of `raw` the schema dropped (not in `parsed`): unknown to this Runboard, so ignored. */
function unknownKeys(raw: unknown, parsed: unknown, prefix = ''): string[] {
  if (!isPlain(raw) || !isPlain(parsed)) return [];
  return Object.keys(raw).flatMap((k) => {
    const key = prefix ? `${prefix}.${k}` : k;
    return Object.hasOwn(parsed, k) ? unknownKeys(raw[k], parsed[k], key) : [key];
  });
}

/** Warnings for profile values a template left for the person to fill in. */
function placeholderWarnings(config: ProjectConfig, sources: Record<string, ConfigSource>): string[] {
  const out: string[] = [];
  if (config.redis && /^rediss?:\/\/[^/@]*:[^/@]+@/.test(config.redis.url))
    out.push(
      `${sourceOf(sources, 'redis.url').file ?? 'the config'}: redis.url holds a password in clear: store it with \`runboard fleet password set NAME\` (reads stdin), write the URL without it and add \`passwordSecret: NAME\` under redis`,
    );
  for (const kind of ['llm_profiles', 'vision_profiles'] as const)
    for (const [name, profile] of Object.entries(config[kind]))
      for (const [k, v] of Object.entries(profile as Record<string, unknown>))
        if (typeof v === 'string' && isPlaceholder(v)) {
          const key = `${kind}.${name}.${k}`;
          out.push(
            `${sourceOf(sources, key).file ?? 'the built-in defaults'}: ${key} is still a placeholder (${JSON.stringify(v)}): set the real ${k} before a flow uses profile ${name}`,
          );
        }
  return out;
}

/**
 * Wrong values of the user config that this project's config.yaml overrides: the project works, but
 * every project that does not override them would fail, so they are said (a warning) rather than
 * passed over in silence.
 */
function overriddenUserErrors(
  userData: Plain,
  file: string,
  sources: Record<string, ConfigSource>,
): string[] {
  const alone = ProjectConfig.safeParse(
    mergeLayer(structuredClone(BUILTIN_DEFAULTS), userData, { layer: 'user', file }, {}),
  );
  if (alone.success) return [];
  return alone.error.issues.flatMap((i) => {
    const key = i.path.map(String).join('.');
    // a value the user set (not one missing from a flow the user config completes only in part)
    let v: unknown = userData;
    for (const k of i.path) v = isPlain(v) ? v[String(k)] : undefined;
    return key && v !== undefined && sourceOf(sources, key).layer === 'project'
      ? [
          `${file}: ${key}: ${i.message}: this project's config.yaml overrides it, but a project that does not would fail: fix it there`,
        ]
      : [];
  });
}

/**
 * The effective config of a project: defaults ← user config ← the project's config.yaml. Throws a
 * ProjectError naming the file (and key) that is wrong, and what to do.
 */
export function resolveConfig(project: ConfigText, user: ConfigText | null): EffectiveConfig {
  const warnings: string[] = [];
  const sources: Record<string, ConfigSource> = {};
  let merged: Plain = structuredClone(BUILTIN_DEFAULTS);
  let userData: Plain | undefined;
  for (const [kind, src] of [
    ['user', user],
    ['project', project],
  ] as const) {
    if (!src) continue;
    const m = migrate(src, kind, warnings);
    if (m.changed)
      warnings.push(
        `${src.file}: version ${m.from} is older than this Runboard's (${CONFIG_VERSION}); it was read as version ${CONFIG_VERSION} (\`runboard config --upgrade\` writes that into the file, keeping your comments)`,
      );
    const data = (m.doc.toJS() as Plain | null) ?? {};
    // the effective version is this Runboard's; a file that sets it is where it came from
    if (Object.hasOwn(data, 'version')) sources.version = { layer: kind, file: src.file };
    delete data.version;
    renameDeprecated(data, src.file, warnings);
    if (kind === 'user') userData = data;
    merged = mergeLayer(merged, data, { layer: kind, file: src.file }, sources);
  }
  if (userData && user) warnings.push(...overriddenUserErrors(userData, user.file, sources));
  const parsed = ProjectConfig.safeParse(merged);
  if (!parsed.success) {
    const first = parsed.error.issues[0]!;
    const s = sourceOf(sources, first.path.map(String).join('.'));
    const file = s.layer === 'user' ? s.file! : project.file;
    throw new ProjectError(file, `invalid config: ${zodIssues(parsed.error, sources, project.file)}`);
  }
  for (const key of unknownKeys(merged, { ...parsed.data, version: 0 }))
    warnings.push(
      `${sourceOf(sources, key).file ?? project.file}: ${key} is not a key this Runboard knows, so it is ignored: check its spelling (docs/user-guide.md lists the keys)`,
    );
  warnings.push(...placeholderWarnings(parsed.data, sources));
  return {
    config: parsed.data,
    sources,
    warnings,
    files: { user: user?.file ?? userConfigPath(), project: project.file, userExists: user !== null },
  };
}

/** The project's config.yaml, read (a clear error when it cannot be). */
export function readProjectConfig(projectDir: string): ConfigText {
  const file = path.join(projectDir, 'config.yaml');
  try {
    return { file, text: readRegularFileSync(file) };
  } catch (err) {
    throw new ProjectError(
      file,
      `cannot read it (${(err as Error).message}); a project folder needs a config.yaml (see docs/user-guide.md)`,
    );
  }
}

/** The effective config of the project folder, with the user config of `env`. */
export function loadEffectiveConfig(
  projectDir: string,
  env: NodeJS.ProcessEnv = process.env,
): EffectiveConfig {
  const project = readProjectConfig(projectDir);
  const user = readUserConfig(env);
  const out = resolveConfig(project, user);
  out.files.user = userConfigPath(env);
  return out;
}

/**
 * The person's text as the migrated document says, changed only where the steps changed it: the
 * version number is spliced in place and new top-level keys are appended, so every other byte
 * (comments, spacing, flow maps) stays. A step that changed more than that (none does yet) has the
 * whole document written by the yaml library, which keeps comments but may restyle.
 */
function writeBack(src: ConfigText, migrated: Document): string {
  const before = parseDocument(src, 'the file');
  const version = before.get('version', true) as Scalar | undefined;
  const was = (before.toJS() as Plain | null) ?? {};
  const now = (migrated.toJS() as Plain | null) ?? {};
  const added = Object.keys(now).filter((k) => !Object.hasOwn(was, k));
  const same = (a: Plain, b: Plain): boolean =>
    JSON.stringify({ ...a, version: 0 }) === JSON.stringify({ ...b, version: 0 });
  const kept = Object.fromEntries(Object.entries(now).filter(([k]) => !added.includes(k)));
  if (!version?.range || !same(was, kept)) return migrated.toString({ lineWidth: 0 });
  let text = src.text.slice(0, version.range[0]) + String(now.version) + src.text.slice(version.range[1]);
  for (const key of added) {
    const pair = (migrated.contents as YAMLMap).items.find((p) => (p.key as Scalar).value === key);
    const comment = (pair?.key as Scalar | undefined)?.commentBefore;
    if (text && !text.endsWith('\n')) text += '\n';
    text += (comment ? `#${comment}\n` : '') + YAML.stringify({ [key]: now[key] });
  }
  return text;
}

/**
 * Writes a migrated file back with the person's comments and layout kept and nothing of theirs
 * overwritten (writeBack). Returns the version it had, or null when it was current.
 */
export function upgradeConfigFile(file: string, kind: ConfigKind): { from: number; to: number } | null {
  const src = { file, text: readRegularFileSync(file) };
  const m = migrate(src, kind, []);
  if (!m.changed || m.from === undefined) return null;
  const text = writeBack(src, m.doc);
  // In place, as the board saves it: a rename would detach the read-only mount of config.yaml in the
  // runs working in the project folder (docs/security-model.md "Write").
  if (rewriteInPlaceSync(file, text) === undefined) {
    const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
    writeFileSync(tmp, text);
    renameSync(tmp, file);
  }
  return { from: m.from, to: CONFIG_VERSION };
}

/** The text a file becomes after the migration steps (for tests and previews). */
export function migrateConfigText(text: string, kind: ConfigKind, file = 'config.yaml'): string {
  const src = { file, text };
  const m = migrate(src, kind, []);
  return m.changed ? writeBack(src, m.doc) : text;
}

/** The effective config of a config.yaml text, under `user` (none by default: callers pass readUserConfig()). */
export function parseConfig(file: string, text: string, user: ConfigText | null = null): ProjectConfig {
  return resolveConfig({ file, text }, user).config;
}

/** The effective config of a project folder (defaults ← the user config of `env` ← config.yaml). */
export function loadConfig(projectDir: string, env: NodeJS.ProcessEnv = process.env): ProjectConfig {
  return loadEffectiveConfig(projectDir, env).config;
}

/**
 * Writes the project's config.yaml and the user config as the current version where they are older
 * (the board does it when it opens a project). Returns what it did, one line per file; a file that
 * cannot be upgraded (invalid, read-only) is left as it is: reading it says what is wrong.
 */
export function upgradeConfigFiles(projectDir: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const notes: string[] = [];
  for (const [file, kind] of [
    [userConfigPath(env), 'user'],
    [path.join(projectDir, 'config.yaml'), 'project'],
  ] as const) {
    if (!existsSync(file)) continue;
    try {
      const done = upgradeConfigFile(file, kind);
      notes.push(done ? `${file}: upgraded from version ${done.from} to ${done.to}` : `${file}: up to date`);
    } catch (err) {
      notes.push(`${file}: not upgraded: ${(err as Error).message}`);
    }
  }
  return notes;
}
