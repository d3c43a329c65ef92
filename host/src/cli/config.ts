/**
 * `runboard config`: the effective config of a project (built-in defaults ← the user config ← the
 * project's config.yaml) with where each value came from, and `--upgrade` to write older files as the
 * current version (comments kept).
 */
import { parseArgs } from 'node:util';
import YAML, { isMap, isScalar, isSeq, type Node } from 'yaml';
import {
  configRows,
  loadEffectiveConfig,
  sourceOf,
  upgradeConfigFiles,
  type EffectiveConfig,
} from '../core/project.ts';
import { findProjectDir } from './project-dir.ts';

export const CONFIG_USAGE = `config [--show] [--project DIR] [--json]  the effective config and where each value came from
  config --upgrade [--project DIR]          write older config files as the current version (comments kept)`;

/** The effective config as YAML, each value followed by a comment naming where it came from. */
export function showConfig(eff: EffectiveConfig): string {
  const doc = new YAML.Document(eff.config);
  const mark = (node: Node | null, key: string): void => {
    if (isMap(node) && node.items.length) {
      for (const pair of node.items) {
        const k = String(isScalar(pair.key) ? pair.key.value : pair.key);
        const at = key ? `${key}.${k}` : k;
        if (isMap(pair.value) && pair.value.items.length) mark(pair.value, at);
        else if (isScalar(pair.value) || isSeq(pair.value) || isMap(pair.value)) {
          if (!isScalar(pair.value) && !pair.value.items.length) pair.value.flow = true; // `{}` on its line
          pair.value.comment = ` ${sourceOf(eff.sources, at).layer}`;
        }
      }
    }
  };
  mark(doc.contents, '');
  // what a flow's profile gives it, after its own values
  for (const r of configRows(eff).filter((row) => row.source.layer === 'profile')) {
    const node = doc.createNode(r.value);
    node.comment = ` profile ${r.source.profile}`;
    doc.setIn(r.key.split('.'), node);
  }
  const user = eff.files.userExists ? eff.files.user : `${eff.files.user} (none)`;
  return (
    `# The effective config: built-in defaults ← user config ← project config; after each value,\n` +
    `# the layer it came from (profile NAME: the flow's profile gives it).\n# user:    ${user}\n# project: ${eff.files.project}\n` +
    doc.toString({ lineWidth: 0 })
  );
}

export function cmdConfig(args: string[]): number {
  const { values } = parseArgs({
    args,
    options: {
      show: { type: 'boolean' },
      upgrade: { type: 'boolean' },
      project: { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  const dir = findProjectDir(values.project);
  if (values.upgrade) {
    const notes = upgradeConfigFiles(dir);
    process.stdout.write(notes.map((n) => `${n}\n`).join(''));
    return notes.some((n) => n.includes(': not upgraded: ')) ? 1 : 0;
  }
  const eff = loadEffectiveConfig(dir);
  for (const w of eff.warnings) process.stderr.write(`runboard: ${w}\n`);
  if (values.json) {
    const sources = Object.fromEntries(configRows(eff).map((r) => [r.key, r.source]));
    process.stdout.write(
      JSON.stringify({ files: eff.files, warnings: eff.warnings, config: eff.config, sources }) + '\n',
    );
  } else process.stdout.write(showConfig(eff));
  return 0;
}
