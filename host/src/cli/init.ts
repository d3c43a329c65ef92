/**
 * `runboard init [DIR]`: makes DIR (default: the current folder) a Runboard project in one step: a
 * commented config.yaml with a `shell` flow, a first card, the folder granted to runs (once, here), and
 * the project registered with the supervisor so its scheduled cards fire with no board open.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { digestOf, Ledger } from '@runboard/supervisor/ledger';
import type { StatePaths } from '@runboard/supervisor/paths';
import { call, RegisterProject } from '@runboard/supervisor/protocol';
import { GrantStore } from '../core/grant-store.ts';
import { CONFIG_VERSION } from '../core/project.ts';
import { SupervisorClient } from '../core/supervisor-client.ts';

export const INIT_USAGE = `init [DIR]                               make DIR (default: here) a project: config, a first card, its grant`;

/** A mistake the person can fix by running something else (printed as one sentence, exit 2). */
export class InitUsageError extends Error {}

const CONFIG = `# Runboard project (docs/user-guide.md). Flows are configured here; cards are in cards/.
version: ${CONFIG_VERSION}
scheduler:
  maxConcurrency: 4 # runs at once, all flows together
flows:
  # Runs a card's \`command:\` in its workspace, sandboxed: no model, no key needed.
  shell:
    runner: command
    cap: 2 # runs of this flow at once
    timeout: 10m # a run still going after this is stopped and fails as timed out

  # A coding agent needs a provider key, kept by the supervisor only (never in this file):
  #   printenv OPENAI_API_KEY | runboard key set openai
  # implement:
  #   runner: codex
  #   provider: openai
  #   model: gpt-5-codex
  #   worktree: true # edits in its own git worktree and branch; keep or discard afterwards
`;

const FIRST_CARD = `---
id: first-card
title: My first card
flow: shell
status: backlog
command: echo "Hello from Runboard"; echo "This run sees:"; ls -la
---
# Task
Lists this project's folder from a sandboxed run: drag the card into Queued (or press Run in its
inspector), or run \`runboard run cards/first-card.md\`.

To run a card on a schedule, add to its front matter e.g. \`schedule: every day at 9:00\`
(\`runboard schedules --check "every day at 9:00"\` says what a phrase means).
`;

export async function cmdInit(args: string[], paths: StatePaths): Promise<number> {
  const { positionals } = parseArgs({ args, allowPositionals: true });
  if (positionals.length > 1) throw new InitUsageError('init takes at most one folder');
  const dir = path.resolve(positionals[0] ?? '.');
  if (existsSync(dir) && !statSync(dir).isDirectory())
    throw new InitUsageError(`${dir} is a file, not a folder: give init a folder`);
  const config = path.join(dir, 'config.yaml');
  if (existsSync(config))
    throw new InitUsageError(
      `${dir} is a Runboard project already (it has config.yaml): \`runboard serve\` there opens its board`,
    );
  mkdirSync(path.join(dir, 'cards'), { recursive: true });
  writeFileSync(config, CONFIG, { flag: 'wx' });
  const card = path.join(dir, 'cards', 'first-card.md');
  if (!existsSync(card)) writeFileSync(card, FIRST_CARD, { flag: 'wx' });
  const out: string[] = [`made a Runboard project in ${dir}`, `  config.yaml        a \`shell\` flow`];
  out.push(`  cards/first-card.md  a first card (runs \`ls\`, no key needed)`);
  // The person chose this folder and what is in it now, as a board's first open does (ledger.ts): its
  // config and cards are confirmed, so its schedules may run with no board ever opened.
  const ledger = Ledger.open(paths.root, dir);
  if (ledger.fresh) {
    ledger.recordConfig(readFileSync(config, 'utf8'));
    const cards = readdirSync(path.join(dir, 'cards'))
      .filter((n) => n.endsWith('.md'))
      .map((n) => path.join(dir, 'cards', n));
    ledger.record(cards.map((file) => ({ file, digest: digestOf(readFileSync(file, 'utf8')) })));
  }
  const grants = new GrantStore(paths);
  if (grants.status(dir).state === 'ok') out.push(`  ${dir} was granted to runs already`);
  else {
    const g = grants.grant(dir);
    out.push(`  granted ${g.path} to runs (they may read and write in it, nothing outside)`);
  }
  const client = await SupervisorClient.connect(paths, { autoStart: true });
  try {
    await call(client.conn, RegisterProject, { project: dir });
  } finally {
    client.close();
  }
  out.push(`  registered with the supervisor: scheduled cards run even with no board open`);
  const here = path.relative(process.cwd(), dir);
  out.push('', `next: ${here ? `cd ${here} && ` : ''}runboard serve   (opens the board)`);
  process.stdout.write(out.join('\n') + '\n');
  return 0;
}
