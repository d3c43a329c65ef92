/**
 * A run's inputs go with its job to the host of the fleet that runs it (issue 34): a reflect card's
 * recording and the flow's prompt folder, read on the board's machine, written by the host under the
 * job's own folder, and the run's workflow (schema.json) back on the board's side as a local run's. A
 * Redis writer's job whose inputs climb out of that folder, or whose bytes are not the ones it names, is
 * refused before anything is written; a job's own paths (its flow's prompt folder) are never used on
 * the host. A real redis-server (with a password), the board's supervisor, a host supervisor, real
 * reflect runs through the host's proxy and the scripted model server.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWorkflow, type FlowSpec, type RunResult, type Workflow } from '@runboard/supervisor/protocol';
import { writeProviderKey } from '../../supervisor/src/common/secrets.ts';
import { inputsKey } from '../../supervisor/src/node/fleet/inputs.ts';
import { FLEET_JOB_VERSION, queueName, redisOptions } from '../../supervisor/src/node/fleet/job.ts';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { act, final } from '../cu/cu-harness.ts';
import { formReflectEpisodes, requestParts, TYPED } from '../cu/reflect-script.ts';
import { REPO, waitUntil, type Harness } from '../helpers/harness.ts';
import { startGateway, startHost } from './hosts.ts';
import type { RedisServer } from './redis.ts';

const KEY = 'sk-test-openai-0123456789';
const TITLE = 'Runboard Reflect Form';
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
let redis: RedisServer;
let board: Harness;
let host: Harness;
let model: ModelServer;
let queue: Queue;
const hosts: Harness[] = [];
const recording = 'rec-20260101-000000-abc123';

/** A recording as the recorder writes it: the form filled (click Name, type, Tab, type, click Submit). */
function writeRecording(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const win = { id: 1, app: 'form', title: TITLE, bounds: [0, 0, 400, 300] };
  const el = (role: string, name: string, y: number) => ({
    role,
    name,
    bounds: [10, y, 200, 30],
    path: [
      { role: 'frame', name: TITLE, index: 0 },
      { role, name, index: 0 },
    ],
  });
  const name = el('text', 'Name', 10);
  const steps = [
    { action: { type: 'click', x: 20, y: 20, button: 'left' }, element: name },
    { action: { type: 'type', text: TYPED.full_name }, focus: name },
    { action: { type: 'press', key: 'Tab' }, focus: name },
    { action: { type: 'type', text: TYPED.email }, focus: el('text', 'Email', 50) },
    { action: { type: 'click', x: 20, y: 100, button: 'left' }, element: el('push button', 'Submit', 90) },
  ];
  const lines = steps.map((s, i) => {
    writeFileSync(path.join(dir, `step-${i + 1}.png`), PNG);
    return JSON.stringify({
      step: i + 1,
      at: 1000 * (i + 1),
      screenshot: `step-${i + 1}.png`,
      window: win,
      ...s,
    });
  });
  writeFileSync(path.join(dir, 'manifest.jsonl'), lines.join('\n') + '\n');
  writeFileSync(path.join(dir, 'video.mp4'), 'not sent: reflect reads the screenshots');
}

const flow = (): FlowSpec => ({
  name: 'reflect',
  runner: 'reflect',
  provider: 'openai',
  model: 'gpt-5.2-codex',
  timeoutMs: 120_000,
  prompt: path.join(REPO, 'prompts'),
});

beforeAll(async () => {
  model = await startModelServer();
  model.setEpisodes(formReflectEpisodes(TITLE));
  ({ board, redis } = await startGateway());
  host = await startHost(redis.url, 'reflector', ['reflect'], 2, ['ws'], {
    RUNBOARD_PROVIDER_OPENAI_URL: model.url,
  });
  writeProviderKey(host.paths, 'openai', KEY);
  // An extraction names the project as its workspace (it works on its shipped input alone).
  hosts.push(
    await startHost(redis.url, 'extractor', ['extract'], 1, ['.'], {
      RUNBOARD_PROVIDER_OPENAI_URL: model.url,
    }),
  );
  writeProviderKey(hosts[0]!.paths, 'openai', KEY);
  queue = new Queue(queueName('reflect'), { connection: redisOptions(redis.url) });
}, 120_000);

afterAll(async () => {
  await queue?.close();
  await host?.stop().catch(() => undefined);
  for (const h of hosts) await h.stop().catch(() => undefined);
  await board?.stop();
  await redis?.stop();
  await model?.close();
});

describe("a run's inputs on a fleet host", () => {
  it("reflect on a host reads the card's recording and the prompt folder shipped with the job; its workflow comes back", async () => {
    // The project on the board's machine: its card names a recording of its recordings/.
    const project = board.root;
    writeRecording(path.join(project, 'recordings', recording));
    mkdirSync(path.join(project, 'cards'), { recursive: true });
    const card = path.join(project, 'cards', 'reflect-me.md');
    writeFileSync(
      card,
      `---\ntitle: Fill the form\nflow: reflect\nrecording: ${recording}\n---\n# Task\nFill it.\n`,
    );
    const { runId } = await board.client.launch({
      card: { path: card, title: 'Fill the form', project },
      flow: flow(),
      workspace: board.workspace,
      grant: board.grant,
    });
    const { result } = await board.collect(runId);
    expect(result.status, `${result.summary} ${JSON.stringify(result.termination)}`).toBe('succeeded');
    expect(result.metrics.host).toBe('reflector');
    // Pass A once per recorded step with its screenshots (the last has no after), then pass B.
    const a = model.requests.filter((r) => r.episode === 'pass-a');
    expect(a.map((r) => requestParts(r.body).images).sort()).toEqual([1, 2, 2, 2, 2]);
    expect(model.requests.filter((r) => r.episode === 'pass-b')).toHaveLength(1);
    expect(a[0]!.headers.authorization).toBe(`Bearer ${KEY}`); // the host's key, behind its proxy
    // The workflow is on the board's side, in the run's artifacts, as a local run's.
    const text = readFileSync(path.join(result.logDir, 'artifacts', 'schema.json'), 'utf8');
    expect(checkWorkflow(JSON.parse(text)).ok).toBe(true);
    expect((JSON.parse(text) as Workflow).task_params.map((p) => p.name)).toEqual(['full_name', 'email']);
    // The host's copy went with the run; what was shipped left the video out, and Redis keeps nothing.
    await waitUntil('the copy removed', () => !existsSync(path.join(host.root, 'fleet-cards', runId)));
    const r = new Redis(redisOptions(redis.url));
    try {
      await waitUntil('the inputs dropped from Redis', async () => (await r.exists(inputsKey(runId))) === 0);
    } finally {
      r.disconnect();
    }
  }, 120_000);

  it("extract on a host reads the video shipped with the job (the board's path is never used there); its task.md comes back", async () => {
    const videos = path.join(board.workspace, 'videos');
    mkdirSync(videos, { recursive: true });
    const video = path.join(videos, 'demo.mp4');
    execFileSync('ffmpeg', [
      '-v',
      'error',
      '-nostdin',
      '-y',
      '-f',
      'lavfi',
      '-i',
      'testsrc=size=160x120:rate=5',
      '-t',
      '2',
      '-pix_fmt',
      'yuv420p',
      video,
    ]);
    const answer =
      'TaskDetected: true\nStatus: TASK_FOUND\nNoTaskReason: none\n\n# Task\nWatch the test card.\n\n## Questions\n- None.\n';
    model.setEpisodes([{ name: 'extract', requireTools: false, turns: [{ text: answer }] }]);
    const card = path.join(board.root, 'cards', 'extract-me.md');
    mkdirSync(path.dirname(card), { recursive: true });
    writeFileSync(card, '---\ntitle: From a video\nflow: extract\n---\n# Task\n(being extracted)\n');
    const before = model.requests.length;
    const { runId } = await board.client.launch({
      card: { path: card, title: 'From a video', project: board.root },
      flow: {
        name: 'extract',
        runner: 'extract',
        provider: 'openai',
        model: 'gpt-5.2',
        timeoutMs: 120_000,
        prompt: path.join(REPO, 'prompts', 'task_extraction'),
        extract: { input: video, frames: 2, frameWidth: 160 },
      },
      workspace: videos,
      grant: board.grant,
      paths: [video],
    });
    const { result } = await board.collect(runId);
    expect(result.status, `${result.summary} ${JSON.stringify(result.termination)}`).toBe('succeeded');
    expect(result.metrics.host).toBe('extractor');
    const req = model.requests.slice(before).find((r) => r.api === 'responses')!;
    const content = (req.body!.input as { content: { type: string }[] }[])[0]!.content;
    expect(content.filter((c) => c.type === 'input_image')).toHaveLength(2); // frames of the shipped video
    expect(readFileSync(path.join(result.logDir, 'artifacts', 'task.md'), 'utf8')).toContain(
      'Watch the test card.',
    );
  }, 120_000);

  it("computer-use on a host's private display: its step screenshots come back to the board's side", async () => {
    const cuHost = await startHost(redis.url, 'desktop-host', ['desktop'], 1, ['ws'], {
      RUNBOARD_PROVIDER_OPENAI_URL: model.url,
    });
    hosts.push(cuHost);
    writeProviderKey(cuHost.paths, 'openai', KEY);
    model.setEpisodes([
      {
        name: 'cu',
        match: 'CU-FLEET',
        turns: [
          act({ action: 'wait', seconds: 0.05 }),
          final({ status: 'SUCCESS', summary: 'done', error: '', questions: [] }),
        ],
      },
    ]);
    const card = path.join(board.root, 'cards', 'cu.md');
    mkdirSync(path.dirname(card), { recursive: true });
    writeFileSync(
      card,
      '---\ntitle: On a host\nflow: desktop\n---\n# Task\nCU-FLEET wait once, then finish.\n',
    );
    const { runId } = await board.client.launch({
      card: { path: card, title: 'On a host', project: board.root },
      flow: {
        name: 'desktop',
        runner: 'computer-use',
        provider: 'openai',
        model: 'gpt-5.2-codex',
        timeoutMs: 120_000,
        heartbeatTimeoutMs: 30_000,
        prompt: path.join(REPO, 'prompts', 'execution_agent'),
        sandbox: {},
        computerUse: { privateDisplay: true, displaySize: '800x600x24', liveFrameMs: 0, imageMaxWidth: 640 },
      },
      workspace: board.workspace,
      grant: board.grant,
    });
    const { result } = await board.collect(runId);
    expect(result.status, `${result.summary} ${JSON.stringify(result.termination)}`).toBe('succeeded');
    expect(result.metrics.host).toBe('desktop-host');
    const shots = readdirSync(path.join(result.logDir, 'artifacts')).filter((f) => /^step-\d+\.jpg$/.test(f));
    expect(shots.length).toBeGreaterThanOrEqual(2); // one per model turn, as a local run keeps them
  }, 120_000);

  it('inputs that cannot go with the job (a link in the prompt folder) fail the run at once, saying what to do', async () => {
    const prompts = path.join(board.root, 'linked-prompts');
    mkdirSync(path.join(prompts, 'reflect_pass_a'), { recursive: true });
    symlinkSync('/etc/passwd', path.join(prompts, 'reflect_pass_a', 'prompt.md'));
    const card = path.join(board.root, 'cards', 'linked.md');
    writeFileSync(card, `---\ntitle: Linked\nflow: reflect\nrecording: ${recording}\n---\n# Task\n`);
    const { runId } = await board.client.launch({
      card: { path: card, title: 'Linked', project: board.root },
      flow: { ...flow(), prompt: prompts },
      workspace: board.workspace,
      grant: board.grant,
    });
    const { result } = await board.collect(runId);
    expect(result.status).toBe('failed');
    expect(result.termination?.detail).toBe(
      `${path.join(prompts, 'reflect_pass_a', 'prompt.md')} is a link: a run's inputs are sent to a host of the fleet only as regular files`,
    );
    expect(result.metrics.host).toBeUndefined(); // no host ever saw it
  }, 60_000);

  /** A job as a Redis writer queues it, with `files` as its inputs (bytes put beside it as given). */
  async function hostile(
    files: { name: string; data: Buffer; claim?: Buffer }[],
    flowOver: Partial<FlowSpec> = {},
  ): Promise<{ state: string; reason: string; result: RunResult | undefined; runId: string }> {
    const runId = `20260101-000000-${randomBytes(3).toString('hex')}`;
    const r = new Redis(redisOptions(redis.url));
    for (const f of files) await r.hset(inputsKey(runId), f.name, f.data);
    r.disconnect();
    await queue.add(
      'run',
      {
        v: FLEET_JOB_VERSION,
        runId,
        flow: { ...flow(), prompt: undefined, ...flowOver },
        workspace: 'ws',
        card: { title: 'from a Redis writer', text: `---\ntitle: x\nrecording: ${recording}\n---\nhi\n` },
        submittedAt: new Date().toISOString(),
        inputs: {
          files: files.map((f) => ({
            name: f.name,
            size: (f.claim ?? f.data).length,
            sha256: createHash('sha256')
              .update(f.claim ?? f.data)
              .digest('hex'),
          })),
        },
      },
      { jobId: runId, attempts: 1 },
    );
    let state = '';
    await waitUntil(
      `job ${runId} to end`,
      async () => {
        state = (await (await queue.getJob(runId))?.getState()) ?? 'gone';
        return state === 'completed' || state === 'failed';
      },
      60_000,
    );
    const job = (await queue.getJob(runId))!;
    const rv = job.returnvalue as { result?: RunResult } | null;
    return { state, reason: job.failedReason ?? '', result: rv?.result, runId };
  }

  it('a job whose inputs climb out of its folder, or whose bytes are not the ones it names, is refused before anything is written', async () => {
    const out = await hostile([{ name: 'prompt/../../../escaped.txt', data: Buffer.from('x') }]);
    expect(out.state).toBe('failed');
    expect(out.reason).toMatch(/^reflector refused the job: it is not a run of this version/);
    expect(existsSync(path.join(host.root, 'escaped.txt'))).toBe(false);
    const place = await hostile([{ name: 'project/config.yaml', data: Buffer.from('x') }]);
    expect(place.reason).toMatch(/^reflector refused the job: it is not a run of this version/);
    const swapped = await hostile([
      { name: 'prompt/reflect_pass_a/prompt.md', data: Buffer.from('evil'), claim: Buffer.from('good') },
    ]);
    expect(swapped.state).toBe('failed');
    expect(swapped.reason).toMatch(
      /^reflector could not take the run's inputs: its input prompt\/reflect_pass_a\/prompt.md in Redis is not the file the job names/,
    );
    expect(existsSync(path.join(host.root, 'fleet-cards', swapped.runId))).toBe(false);
  }, 120_000);

  it("a job's own prompt path is never used on the host: only what came with the job", async () => {
    // A folder of the host with prompts a run would follow: a Redis writer names it in the job.
    const planted = path.join(host.root, 'planted-prompts');
    for (const pass of ['reflect_pass_a', 'reflect_pass_b']) {
      mkdirSync(path.join(planted, pass), { recursive: true });
      writeFileSync(path.join(planted, pass, 'prompt.md'), 'PLANTED {{ACTION}}');
      writeFileSync(path.join(planted, pass, 'config.yaml'), 'version: 1\nfix_prompt: again\n');
    }
    const before = model.requests.length;
    const out = await hostile([], { prompt: planted });
    expect(out.state).toBe('completed');
    // The run had no prompt folder (the job's path was dropped), and said so; the planted one was never read.
    expect(out.result?.status).toBe('failed');
    expect(out.result?.summary).toMatch(/has no prompt folder/);
    expect(model.requests.slice(before).some((r) => JSON.stringify(r.body).includes('PLANTED'))).toBe(false);
  }, 120_000);
});
