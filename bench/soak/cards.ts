/**
 * The soak's project: its config.yaml and a seeded mix of cards (command runs of every length and
 * output size, computer-use runs on private displays, replays, one scheduled card), and the scripted
 * model's episodes for the computer-use ones.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Episode } from '../../tests/fixtures/model-server/server.ts';
import { rng } from './chaos.ts';

/** The soak runs from the repository's root (`npm run soak`). */
export const REPO = process.cwd();
export const FORM_APP = path.join(REPO, 'tests', 'fixtures', 'desktop', 'form_app.py');
export const REPLAY_TITLE = 'Runboard Replay Form';
export const REPLAY_WORKFLOW = path.join(
  REPO,
  'tests',
  'fixtures',
  'workflows',
  'form-replay',
  'schema.json',
);

export type CardKind = 'command' | 'computer-use' | 'replay' | 'scheduled';

export interface SoakCard {
  id: string;
  kind: CardKind;
  text: string;
  /** command cards: the numbered lines it prints (then `<id> END`), and whether it exits non-zero. */
  lines?: number;
  fails?: boolean;
  /** computer-use cards: the episode it plays. */
  episode?: 'ok' | 'ask' | 'fail';
  /** replay cards: the workflow written beside it. */
  workflow?: string;
}

export function soakConfig(repo: string, concurrency: number): string {
  const app = (title: string): string => `[/usr/bin/python3, ${FORM_APP}, --title, ${title}]`;
  return `version: 1
scheduler:
  maxConcurrency: ${concurrency}
  backoff: { base: 2s, retries: 1 }
flows:
  shell: { runner: command, cap: ${concurrency}, timeout: 3m }
  desktop:
    runner: computer-use
    provider: openai
    model: gpt-test
    prompt: ${path.join(repo, 'prompts', 'execution_agent')}
    cap: 2
    timeout: 3m
    computerUse:
      privateDisplay: true
      displaySize: 800x600x24
      imageMaxWidth: 400
      app: ${app('Soak Form')}
  replay:
    runner: replay
    provider: openai
    prompt: ${path.join(repo, 'prompts', 'replay_agent')}
    cap: 1
    timeout: 3m
    computerUse:
      privateDisplay: true
      displaySize: 1024x768x24
      app: ${app(REPLAY_TITLE)}
`;
}

const front = (lines: string[]): string => `---\n${lines.join('\n')}\n---\n`;

/** A command that prints `lines` numbered lines in `chunks` with `pause` s between them, then END. */
export function commandOf(id: string, lines: number, chunks: number, pause: number, fails: boolean): string {
  const per = Math.ceil(lines / chunks);
  const body =
    `for k in $(seq 0 ${chunks - 1}); do ` +
    `a=$((k*${per}+1)); b=$((k*${per}+${per})); [ $b -gt ${lines} ] && b=${lines}; ` +
    `[ $a -le $b ] && seq -f '${id} %.0f' $a $b; sleep ${pause}; done; echo '${id} END'`;
  return fails ? `${body}; echo '${id} exits 3' >&2; exit 3` : body;
}

/** `n` cards from `seed`: ~75 % command runs, ~20 % computer use, a few replays, one scheduled card. */
export function soakCards(seed: number, n: number): SoakCard[] {
  const r = rng(seed ^ 0x5eed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const workflow = readFileSync(REPLAY_WORKFLOW, 'utf8');
  const cards: SoakCard[] = [
    {
      id: 'tick',
      kind: 'scheduled',
      text: front([
        'title: Tick every minute',
        'flow: shell',
        'workspace: ./workspace',
        'schedule: every minute',
        `command: ${JSON.stringify('echo tick; sleep 2; echo tock')}`,
      ]),
    },
  ];
  const replays = Math.max(1, Math.round(n / 60));
  for (let i = 1; cards.length < n; i++) {
    const id = `c${String(i).padStart(4, '0')}`;
    const x = r();
    if (x < replays / n) {
      cards.push({
        id,
        kind: 'replay',
        workflow,
        text:
          front(['title: Replay the form ' + id, 'flow: replay', 'params:', '  name: "Grace Hopper"']) +
          '# Task\nReplay.\n\n## Questions\n- None.\n',
      });
    } else if (x < 0.22) {
      const episode = pick(['ok', 'ok', 'ok', 'ask', 'fail'] as const);
      cards.push({
        id,
        kind: 'computer-use',
        episode,
        text:
          front([`title: Look at the form ${id}`, 'flow: desktop', 'workspace: ./workspace']) +
          `# Task\nSOAK-EPISODE-${episode.toUpperCase()}\n`,
      });
    } else {
      const lines = pick([0, 1, 10, 200, 5_000, 50_000, 200_000]);
      const chunks = 1 + Math.floor(r() * 6);
      const pause = pick([0, 0, 0.2, 1, 3, 8]);
      const fails = r() < 0.06;
      cards.push({
        id,
        kind: 'command',
        lines,
        fails,
        text: front([
          `title: Print ${lines} lines ${id}`,
          'flow: shell',
          'workspace: ./workspace',
          `command: ${JSON.stringify(commandOf(id, lines, chunks, pause, fails))}`,
        ]),
      });
    }
  }
  return cards;
}

const final = (o: Record<string, unknown>): { text: string } => ({ text: JSON.stringify(o) });
const act = (args: Record<string, unknown>) => ({ toolCalls: [{ name: 'desktop_action', arguments: args }] });

/** The scripted model's episodes, matched by the marker in each computer-use card's task. */
export function soakEpisodes(): Episode[] {
  const look = [
    { ...act({ action: 'mouse_move', x: 200, y: 150 }), delayMs: 300 },
    { toolCalls: [{ name: 'desktop_read', arguments: { title: 'Soak Form' } }], delayMs: 300 },
  ];
  return [
    {
      name: 'ok',
      match: 'SOAK-EPISODE-OK',
      turns: [...look, final({ status: 'SUCCESS', summary: 'looked at the form', error: '', questions: [] })],
    },
    {
      name: 'ask',
      match: 'SOAK-EPISODE-ASK',
      turns: [
        look[0]!,
        final({
          status: 'NEEDS_CLARIFICATION',
          summary: 'the form wants a name',
          error: '',
          questions: ['Which name should go into the form?'],
        }),
      ],
    },
    {
      name: 'fail',
      match: 'SOAK-EPISODE-FAIL',
      turns: [
        look[0]!,
        final({ status: 'FAILED', summary: 'gave up', error: 'the form has no Save button', questions: [] }),
      ],
    },
  ];
}
