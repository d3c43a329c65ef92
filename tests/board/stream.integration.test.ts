/**
 * A run's output through `runboard serve`'s SSE stream to a viewer that stops reading for a while: the
 * host pauses its supervisor stream when 4 MiB are unsent and re-attaches from the exact offsets once the
 * viewer drained (BoardService.streamRun). Every line must arrive once, in order.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BoardServer, sleep, waitUntil } from '../e2e/helpers/board.ts';

const LINES = 1_000_000;
let server: BoardServer;
beforeAll(async () => {
  server = await BoardServer.start('version: 1\nflows:\n  shell: { runner: command, cap: 1 }\n', {
    'many.md': `---\ntitle: Many\nflow: shell\nworkspace: ./workspace\ncommand: "seq 1 ${LINES}"\n---\n`,
  });
});
afterAll(async () => {
  await server?.stop();
});

describe('run stream to a slow viewer', () => {
  it('pauses and resumes without losing or repeating a line', async () => {
    await server.api('POST', '/api/cards/many/move', { to: 'queued', index: 0 });
    const runId = await waitUntil('a run id', async () => (await server.card('many'))?.runId, 15_000);
    const result = await new Promise<{ n: number; bad: string | undefined }>((resolve, reject) => {
      const req = http.get(
        `${server.base}/api/runs/${runId}/stream`,
        { headers: { authorization: `Bearer ${server.token}` } },
        (res) => {
          res.pause(); // take nothing while the whole run is written
          let n = 0;
          let bad: string | undefined;
          let tail = '';
          void sleep(4000).then(() => {
            res.setEncoding('utf8');
            res.on('data', (d: string) => {
              const msgs = (tail + d).split('\n\n');
              tail = msgs.pop()!;
              for (const m of msgs) {
                if (!m.startsWith('data: ')) continue;
                const msg = JSON.parse(m.slice(6)) as { type: string; lines?: string[] };
                if (msg.type === 'lines')
                  for (const l of msg.lines!) if (l !== String(++n)) bad ??= `line ${n} was ${l}`;
                if (msg.type === 'end') {
                  req.destroy();
                  resolve({ n, bad });
                }
              }
            });
            res.resume();
          });
        },
      );
      req.on('error', reject);
    });
    expect(result.bad).toBeUndefined();
    expect(result.n).toBe(LINES);
  }, 60_000);
});
