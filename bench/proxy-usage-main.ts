/**
 * The model proxy's per-request overhead of usage accounting (issue 33 item 3: must not regress the
 * step's overhead by more than 10 %). One process, one proxy, one scripted model server: two grants,
 * one with a run's tally (every answer read for its usage, as every run with a provider has now) and
 * one without (the proxy as before), and blocks of sequential requests alternating between them, the
 * order flipping every block, so the machine's drift weighs on both alike. Each request is what a
 * computer-use step sends (a ~200 KB body: a screenshot) through a keep-alive connection, answered
 * whole (JSON) and streamed (SSE). Per block the ratio of p50 round trips (with / without); the
 * verdict is the median of the blocks' ratios.
 *   node bench/proxy-usage.mjs [--blocks 8] [--requests 200]   (docs/bench-computer-use.md)
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { ModelProxy, providerRoutes } from '../supervisor/src/node/model-proxy.ts';
import { RunAccount } from '../supervisor/src/node/proxy-usage.ts';
import { startModelServer } from '../tests/fixtures/model-server/server.ts';

const { values } = parseArgs({
  options: { blocks: { type: 'string', default: '8' }, requests: { type: 'string', default: '200' } },
});
const BLOCKS = Math.max(2, Number(values.blocks));
const N = Math.max(10, Number(values.requests));
const CODEX = { runner: 'codex', apis: ['responses' as const] };
const p50 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const median = p50;

async function main(): Promise<void> {
  const model = await startModelServer({
    episodes: [
      {
        name: 'bench',
        match: 'BENCH-USAGE',
        requireTools: false,
        indexBy: 'requests',
        turns: Array.from({ length: 2 * N * BLOCKS + 10 }, () => ({
          toolCalls: [{ name: 'desktop_action', arguments: { action: 'left_click', x: 10, y: 20 } }],
        })),
      },
    ],
  });
  const proxy = new ModelProxy(
    providerRoutes({ RUNBOARD_PROVIDER_OPENAI_URL: model.url }),
    () => 'sk-bench',
    pino({ level: 'silent' }),
  );
  const counted = new RunAccount({}, {}, 'gpt-4o');
  const withTally = await proxy.grant('20250101-000000-aaaaaa', 'openai', undefined, CODEX, {
    account: counted,
  });
  const without = await proxy.grant('20250101-000000-bbbbbb', 'openai', undefined, CODEX);
  const image = 'A'.repeat(200_000);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

  const once = (g: { port: number; token: string }, stream: boolean): Promise<number> =>
    new Promise((resolve, reject) => {
      const body = JSON.stringify({
        model: 'gpt-4o',
        stream,
        input: `BENCH-USAGE data:image/png;base64,${image}`,
      });
      const t0 = performance.now();
      const req = http.request(
        {
          host: '127.0.0.1',
          port: g.port,
          method: 'POST',
          path: '/openai/v1/responses',
          agent,
          headers: {
            authorization: `Bearer ${g.token}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () =>
            res.statusCode === 200
              ? resolve(performance.now() - t0)
              : reject(new Error(`HTTP ${res.statusCode}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const block = async (g: typeof without, stream: boolean): Promise<number> => {
    const xs: number[] = [];
    for (let i = 0; i < N; i++) xs.push(await once(g, stream));
    return p50(xs);
  };

  for (let i = 0; i < 20; i++) await once(without, false); // warm up
  const rows: string[] = [];
  const ratios: Record<'json' | 'sse', number[]> = { json: [], sse: [] };
  for (let b = 0; b < BLOCKS; b++) {
    for (const stream of [false, true]) {
      const first = b % 2 === 0;
      const a = first ? await block(withTally, stream) : 0;
      const base = await block(without, stream);
      const w = first ? a : await block(withTally, stream);
      const kind = stream ? 'sse' : 'json';
      ratios[kind].push(w / base);
      rows.push(`| ${b + 1} | ${kind} | ${base.toFixed(2)} | ${w.toFixed(2)} | ${(w / base).toFixed(2)}× |`);
    }
  }
  console.log(
    `\nmodel proxy round trip, ${BLOCKS} alternated blocks x ${N} requests (200 KB body), ms p50:\n`,
  );
  console.log('| block | answer | without accounting | with | ratio |\n|---|---|---|---|---|');
  for (const r of rows) console.log(r);
  console.log(
    `\nmedian ratio (with / without): json ${median(ratios.json).toFixed(2)}×, sse ${median(ratios.sse).toFixed(2)}× ` +
      `(${counted.usage.requests} answers counted; load ${(await import('node:os'))
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')})`,
  );
  agent.destroy();
  await proxy.close();
  await model.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
