/**
 * Benchmark of a card's attempts (issue 33; docs/bench-computer-use.md): a board (`runboard serve`)
 * runs one card of a scripted STEPS-step computer-use task as N = 1, 2 and 4 attempts (each a real run
 * on its own private display, in its own worktree, then the judge run), alternated in each round. Per
 * N: the wall time from the card's move to Queued to Done, and the peak memory of every process of the
 * board's root (serve, supervisor, jails, workers, display stacks: RSS summed, sampled every 100 ms),
 * above the idle board's; both as ratios to one attempt.
 *   node bench/attempts.mjs [steps] [rounds]
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startModelServer } from '../tests/fixtures/model-server/server.ts';
import { git } from '../tests/agents/agent-harness.ts';
import { BoardServer, REPO } from '../tests/e2e/helpers/board.ts';
import { processesMentioning } from '../tests/helpers/harness.ts';
import { writeFileSync } from 'node:fs';

const STEPS = Number(process.argv[2] ?? 20);
const ROUNDS = Number(process.argv[3] ?? 3);
/** `--copy MiB`: the workspace is no git repository but a folder of that many MiB (100 KiB files): attempts copy it. */
const COPY_MIB = process.argv.includes('--copy')
  ? Number(process.argv[process.argv.indexOf('--copy') + 1])
  : 0;
const NS = [1, 2, 4] as const;

const flow = (n: number): string => `  a${n}:
    runner: computer-use
    provider: openai
    model: gpt-test
    prompt: ${path.join(REPO, 'prompts', 'execution_agent')}
    cap: 4
    attempts: ${n}
    timeout: 5m
    computerUse: { privateDisplay: true, displaySize: 1024x768x24, maxSteps: ${STEPS + 5}, liveFrameMs: 0 }
`;
const CONFIG = `version: 1\nscheduler: { maxConcurrency: 4 }\nflows:\n${NS.map(flow).join('')}`;
const card = (title: string, n: number): string =>
  `---\ntitle: ${title}\nflow: a${n}\nworkspace: ./workspace\n---\n# Task\nATT-BENCH ${title}\n`;

const PAGE = 4096; // bytes per page (getconf PAGESIZE on this VM)
function rss(pids: number[]): number {
  let sum = 0;
  for (const p of pids)
    try {
      sum += Number(readFileSync(`/proc/${p}/statm`, 'utf8').split(' ')[1]) * PAGE;
    } catch {
      // gone
    }
  return sum;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

async function main(): Promise<void> {
  const model = await startModelServer();
  const steps = Array.from({ length: STEPS }, (_, i) => ({
    toolCalls: [{ name: 'desktop_action', arguments: { action: 'mouse_move', x: 100 + i, y: 100 } }],
  }));
  model.setEpisodes([
    {
      name: 'judge',
      match: 'You are the judge of',
      requireTools: false,
      indexBy: 'requests',
      turns: Array.from({ length: 100 }, () => ({ text: '{"winner": 1, "reasons": "bench"}' })),
    },
    {
      name: 'bench',
      match: 'ATT-BENCH',
      turns: [
        ...steps,
        { text: JSON.stringify({ status: 'SUCCESS', summary: 'ok', error: '', questions: [] }) },
      ],
    },
  ]);
  const cards: Record<string, string> = {};
  for (let r = 0; r < ROUNDS; r++) for (const n of NS) cards[`r${r}-n${n}.md`] = card(`bench r${r} n${n}`, n);
  const server = await BoardServer.start(
    CONFIG,
    cards,
    BoardServer.withModel('openai', model.url, (paths) => {
      const ws = path.join(path.dirname(paths.root), 'project', 'workspace');
      if (COPY_MIB) {
        for (let i = 0; i < COPY_MIB * 10; i++)
          writeFileSync(path.join(ws, `f${i}.bin`), Buffer.alloc(100 * 1024, i % 251));
        return;
      }
      git(ws, 'init', '-q', '-b', 'main');
      writeFileSync(path.join(ws, 'README.md'), '# repo\n');
      git(ws, 'add', '-A');
      git(ws, 'commit', '-qm', 'initial');
    }),
  );
  const wall = new Map<number, number[]>(NS.map((n) => [n, []]));
  const mem = new Map<number, number[]>(NS.map((n) => [n, []]));
  try {
    const idle = rss(processesMentioning(server.root));
    console.error(`bench: idle board ${(idle / 2 ** 20).toFixed(0)} MiB`);
    const board = await server.board();
    for (let r = 0; r < ROUNDS; r++)
      for (const n of r % 2 ? [...NS].reverse() : NS) {
        const id = board.cards.find((c) => c.title === `bench r${r} n${n}`)!.id;
        let peak = 0;
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            peak = Math.max(peak, rss(processesMentioning(server.root)));
            await new Promise((res) => setTimeout(res, 100));
          }
        })();
        const t0 = performance.now();
        await server.api('POST', `/api/cards/${id}/move`, { to: 'queued', index: 0 });
        for (;;) {
          const c = await server.card(id);
          if (c?.column === 'done') break;
          if (c?.column === 'failed' || c?.column === 'backlog')
            throw new Error(`card ${id} ended ${c.column}: ${c.lastError}`);
          await new Promise((res) => setTimeout(res, 50));
        }
        const ms = performance.now() - t0;
        sampling = false;
        await sampler;
        wall.get(n)!.push(ms);
        mem.get(n)!.push(peak - idle);
        console.error(
          `bench: round ${r + 1} N=${n}: ${(ms / 1000).toFixed(2)} s, peak +${((peak - idle) / 2 ** 20).toFixed(0)} MiB`,
        );
      }
  } finally {
    await server.stop();
    await model.close();
  }
  const w1 = median(wall.get(1)!);
  const m1 = median(mem.get(1)!);
  console.log(
    `attempts of a ${STEPS}-step scripted task, ${ROUNDS} rounds alternated, medians` +
      (COPY_MIB ? `; a ${COPY_MIB} MiB folder copied per attempt (no git)` : ''),
  );
  console.log('N | wall s | wall ×N=1 | peak MiB above idle | peak ×N=1');
  for (const n of NS) {
    const w = median(wall.get(n)!);
    const m = median(mem.get(n)!);
    console.log(
      `${n} | ${(w / 1000).toFixed(2)} | ${(w / w1).toFixed(2)} | ${(m / 2 ** 20).toFixed(0)} | ${(m / m1).toFixed(2)}`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
