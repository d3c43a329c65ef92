/**
 * Recording → task through the real parts: the host's extraction (host/src/core/extract.ts) launches a
 * run of the project's extract flow on a real supervisor; the jailed worker's `extract` runner talks to
 * the scripted model server through the supervisor's proxy: Gemini with the video (Files API upload,
 * polls until ACTIVE, generateContent, through @google/genai), OpenAI and Anthropic with frames sampled
 * by ffmpeg plus the recorder's events. Then the gate: only a detected task is written into the card,
 * without the control fields; a failed gate, TaskDetected: false or a provider error leave the card as
 * it was and say why on it.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BoardStore } from '../../host/src/core/board-store.ts';
import { Extractions, ExtractRefused, type ExtractRequest } from '../../host/src/core/extract.ts';
import { GrantStore } from '../../host/src/core/grant-store.ts';
import { parseQuestions } from '../../host/src/core/board-questions.ts';
import { writeProviderKey } from '../../supervisor/src/common/secrets.ts';
import { startModelServer, type ModelServer, type RecordedRequest } from '../fixtures/model-server/server.ts';
import { sampleFrames } from '../../worker/src/runners/extract.ts';
import { DIST, Harness, REPO } from '../helpers/harness.ts';

const KEYS = {
  gemini: 'AIza-test-gemini-0123456789',
  openai: 'sk-test-openai-0123',
  anthropic: 'sk-ant-test-0123',
};
const REC = 'rec-20250101-120000-abc123';

const ANSWER = `TaskDetected: true
Status: TASK_FOUND
NoTaskReason: none

# Task
Sign Ada up in the form app and submit it.

## Steps
1. Type the name into Name.
2. Click Submit.

## Completion checks
- The form says "Thanks, Ada".

## Questions
- Which email address should the form get?
`;

let model: ModelServer;
let h: Harness;
let store: BoardStore;
let ex: Extractions;
let project: string;
let video: string;

function ffmpeg(...args: string[]): void {
  execFileSync('ffmpeg', ['-v', 'error', '-nostdin', '-y', ...args]);
}

beforeAll(async () => {
  model = await startModelServer({ gemini: { pollsBeforeActive: 2 } });
  h = await Harness.start({
    env: {
      RUNBOARD_PROVIDER_GEMINI_URL: model.url,
      RUNBOARD_PROVIDER_OPENAI_URL: model.url,
      RUNBOARD_PROVIDER_ANTHROPIC_URL: model.url,
      // an OpenAI-compatible provider nobody listens for: the network failure of a run
      RUNBOARD_PROVIDER_NOWHERE_URL: 'http://127.0.0.1:9',
    },
  });
  for (const [p, k] of Object.entries({ ...KEYS, nowhere: 'sk-nowhere' })) writeProviderKey(h.paths, p, k);
  project = h.workspace; // granted
  const prompt = path.join(project, 'prompt');
  mkdirSync(prompt);
  // The repository's prompt folder, with a short poll so the test does not wait a second per poll.
  writeFileSync(
    path.join(prompt, 'prompt.md'),
    readFileSync(path.join(REPO, 'prompts/task_extraction/prompt.md')),
  );
  writeFileSync(
    path.join(prompt, 'config.yaml'),
    readFileSync(path.join(REPO, 'prompts/task_extraction/config.yaml'), 'utf8').replace(
      'max_output_tokens: 8192',
      'max_output_tokens: 8192\n  poll_ms: 50',
    ),
  );
  mkdirSync(path.join(project, 'cards'));
  writeFileSync(
    path.join(project, 'config.yaml'),
    `version: 1
flows:
  desktop:
    runner: computer-use
    provider: openai
    prompt: ../prompts/execution_agent
  extract:
    runner: extract
    prompt: prompt
    timeout: 2m
  extract-openai:
    runner: extract
    provider: openai
    model: gpt-5.2
    prompt: prompt
    timeout: 2m
    extract: { frames: 4, frameWidth: 320 }
  extract-anthropic:
    runner: extract
    provider: anthropic
    model: claude-sonnet-4-5
    prompt: prompt
    timeout: 2m
    extract: { frames: 3 }
  extract-nowhere:
    runner: extract
    provider: nowhere
    model: some-model
    prompt: prompt
    timeout: 2m
    extract: { frames: 2 }
`,
  );
  // An in-app recording as the recorder leaves it: recording.json, manifest.jsonl, screenshots, video.mp4.
  const rec = path.join(project, 'recordings', REC);
  mkdirSync(path.join(rec, 'screenshots'), { recursive: true });
  ffmpeg(
    '-f',
    'lavfi',
    '-i',
    'testsrc=size=640x360:rate=10',
    '-t',
    '3',
    '-pix_fmt',
    'yuv420p',
    path.join(rec, 'video.mp4'),
  );
  for (const n of ['start', '1', '2'])
    ffmpeg(
      '-f',
      'lavfi',
      '-i',
      'testsrc=size=640x360',
      '-frames:v',
      '1',
      path.join(rec, 'screenshots', `${n}.png`),
    );
  writeFileSync(
    path.join(rec, 'recording.json'),
    JSON.stringify({
      id: REC,
      version: 1,
      startedAt: '2025-01-01T12:00:00Z',
      endedAt: '2025-01-01T12:00:03Z',
      durationMs: 3000,
      startScreenshot: 'screenshots/start.png',
    }),
  );
  const window = { id: 1, app: 'form_app.py', title: 'Sign up', bounds: [0, 0, 640, 360] };
  writeFileSync(
    path.join(rec, 'manifest.jsonl'),
    [
      {
        step: 1,
        at: 500,
        screenshot: 'screenshots/1.png',
        action: { type: 'type', text: 'Ada' },
        window,
        focus: { role: 'text', name: 'Name', bounds: [10, 10, 100, 20], path: [] },
      },
      { step: 2, at: 1500, screenshot: 'screenshots/2.png', action: { type: 'type', secret: true }, window },
      {
        step: 3,
        at: 2500,
        screenshot: 'screenshots/2.png',
        action: { type: 'click', x: 50, y: 80, button: 'left' },
        window,
        element: { role: 'push button', name: 'Submit', bounds: [40, 70, 60, 20], path: [] },
      },
    ]
      .map((s) => JSON.stringify(s))
      .join('\n') + '\n',
  );
  mkdirSync(path.join(project, 'videos'));
  video = path.join(project, 'videos', 'demo.mp4');
  ffmpeg('-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=5', '-t', '4', '-pix_fmt', 'yuv420p', video);
  store = new BoardStore(project);
  store.load();
  ex = new Extractions({ store, client: h.client, grants: new GrantStore(h.paths), isActive: () => false });
}, 60_000);

afterAll(async () => {
  await h?.stop();
  await model?.close();
});

beforeEach(() => {
  model.requests.length = 0;
});

function answer(text: string, status?: number): void {
  model.setEpisodes([
    { name: 'extract', requireTools: false, turns: [status ? { status, errorMessage: text } : { text }] },
  ]);
}

async function extract(req: ExtractRequest) {
  const started = await ex.start(req);
  const outcome = await started.done;
  return { ...outcome, card: store.get(started.cardId)! };
}

const modelRequests = (api: RecordedRequest['api']) => model.requests.filter((r) => r.api === api);

/** A card of our own, with a task a person wrote, to see that a failed extraction leaves it be. */
function handCard(name: string): string {
  const file = path.join(project, 'cards', `${name}.md`);
  writeFileSync(
    file,
    `---\ntitle: ${name}\nflow: desktop\n---\n# Task\nWritten by hand.\n\n## Questions\n- None.\n`,
  );
  return String(store.ingestNew(file)!.front.id);
}

describe('recording → task', () => {
  it('Gemini: the video through the Files API, the recorder events with it; the task lands in a new card', async () => {
    answer('```markdown\n' + ANSWER + '```');
    const r = await extract({ recording: REC });
    expect(r).toMatchObject({ ok: true, questions: 1 });
    // the card: the task from # Task on, no control fields, its question open in the Q&A panel
    expect(r.card.front).toMatchObject({
      title: `Task from ${REC}`,
      flow: 'desktop',
      status: 'needs-input',
      recording: REC,
    });
    expect(r.card.front.needs).toBeUndefined();
    expect(r.card.body.startsWith('# Task\nSign Ada up')).toBe(true);
    expect(r.card.body).not.toMatch(/TaskDetected|NoTaskReason|Status:/);
    expect(parseQuestions(r.card.body)).toEqual([
      { text: 'Which email address should the form get?', answered: false },
    ]);
    // the Files API sequence, with the real key added by the proxy
    const files = [...model.gemini.files.values()];
    expect(files).toHaveLength(1);
    expect(files[0]!.received).toBe(readFileSync(path.join(project, 'recordings', REC, 'video.mp4')).length);
    expect(files[0]!.polls).toBeGreaterThanOrEqual(3); // PROCESSING twice, then ACTIVE
    expect(files[0]!.deleted).toBe(true); // deleted after use
    const [gen] = modelRequests('gemini');
    expect(gen!.headers['x-goog-api-key']).toBe(KEYS.gemini);
    const parts = (gen!.body!.contents as { parts: Record<string, unknown>[] }[])[0]!.parts;
    expect(parts[0]).toEqual({
      fileData: { fileUri: expect.stringContaining(files[0]!.name) as string, mimeType: 'video/mp4' },
    });
    const text = JSON.stringify(parts);
    expect(text).toContain('type \\"Ada\\" on text \\"Name\\" in form_app.py \\"Sign up\\"');
    expect(text).toContain('click left at (50, 80) on push button \\"Submit\\"');
    expect(text).toContain('typed a secret into a password field (not recorded)');
  });

  it('OpenAI: frames sampled from an imported .mp4 go into a card that exists, replacing its task', async () => {
    const id = handCard('openai-target');
    answer(
      ANSWER.replace('## Questions\n- Which email address should the form get?', '## Questions\n- None.'),
    );
    const r = await extract({ file: video, card: id, extractor: 'extract-openai' });
    expect(r).toMatchObject({ ok: true, questions: 0 });
    expect(r.card.front.status).toBe('backlog'); // nothing open: ready to queue
    expect(r.card.body).toContain('Sign Ada up');
    const [req] = modelRequests('responses');
    expect(req!.headers.authorization).toBe(`Bearer ${KEYS.openai}`);
    const content = (req!.body!.input as { content: { type: string; text?: string }[] }[])[0]!.content;
    expect(content.filter((c) => c.type === 'input_image')).toHaveLength(4);
    expect(content.map((c) => c.text ?? '').join('\n')).toContain('imported video');
  });

  it('Anthropic: frames and the event list of an in-app recording', async () => {
    answer(ANSWER);
    const r = await extract({ recording: REC, extractor: 'extract-anthropic' });
    expect(r.ok).toBe(true);
    const [req] = modelRequests('messages');
    expect(req!.headers['x-api-key']).toBe(KEYS.anthropic);
    const content = (req!.body!.messages as { content: { type: string; text?: string }[] }[])[0]!.content;
    expect(content.filter((c) => c.type === 'image')).toHaveLength(3);
    expect(content.map((c) => c.text ?? '').join('\n')).toContain(
      'click left at (50, 80) on push button "Submit"',
    );
  });

  it('an answer that fails the gate leaves the card as it was and says what was missing', async () => {
    const id = handCard('gate-missing');
    const before = readFileSync(store.get(id)!.file, 'utf8');
    answer(ANSWER.replace(/## Questions[\s\S]*$/, ''));
    const r = await extract({ recording: REC, card: id, extractor: 'extract-openai' });
    expect(r.ok).toBe(false);
    expect(r.card.front.lastError).toMatch(/lacks ## Questions/);
    expect(r.card.body).toBe(before.slice(before.indexOf('# Task')));
  });

  it('TaskDetected: false never overwrites the card', async () => {
    const id = handCard('no-task');
    answer(
      ANSWER.replace('TaskDetected: true', 'TaskDetected: false').replace(
        'NoTaskReason: none',
        'NoTaskReason: the desktop sat idle',
      ),
    );
    const r = await extract({ recording: REC, card: id, extractor: 'extract-anthropic' });
    expect(r.ok).toBe(false);
    expect(r.card.front.lastError).toMatch(/no task found .*the desktop sat idle/);
    expect(r.card.body).toContain('Written by hand.');
  });

  it("a provider's error is said on the card, which keeps its task", async () => {
    const id = handCard('provider-down');
    answer('the backend is overloaded', 503);
    const r = await extract({ recording: REC, card: id });
    expect(r.ok).toBe(false);
    expect(r.card.front.lastError).toMatch(/gemini answered 503.*overloaded/);
    expect(r.card.body).toContain('Written by hand.');
    model.gemini.options.failProcessing = true;
    try {
      const again = await extract({ recording: REC, card: id });
      expect(again.card.front.lastError).toMatch(/could not be processed: the video could not be decoded/);
    } finally {
      model.gemini.options.failProcessing = false;
    }
  });

  it('a transient provider error is tried again, and the task still lands', async () => {
    const id = handCard('flaky');
    model.setEpisodes([
      {
        name: 'flaky',
        requireTools: false,
        indexBy: 'requests',
        turns: [{ status: 503, errorMessage: 'try again' }, { text: ANSWER }],
      },
    ]);
    const r = await extract({ recording: REC, card: id });
    expect(r).toMatchObject({ ok: true, questions: 1 });
    expect(modelRequests('gemini')).toHaveLength(2);
  });

  it('a network failure says which provider could not be reached, and how', async () => {
    const id = handCard('network-down');
    const r = await extract({ file: video, card: id, extractor: 'extract-nowhere' });
    expect(r.ok).toBe(false);
    expect(r.card.front.lastError).toMatch(
      /nowhere answered 502: runboard proxy: cannot reach provider "nowhere" at http:\/\/127\.0\.0\.1:9: ECONNREFUSED/,
    );
    expect(r.card.body).toContain('Written by hand.');
  });

  it('refuses what is over the limits or not a video, before anything is made', async () => {
    const long = path.join(project, 'videos', 'long.mp4');
    ffmpeg('-f', 'lavfi', '-i', 'color=size=16x16:rate=1', '-t', '301', '-pix_fmt', 'yuv420p', long);
    await expect(ex.start({ file: long })).rejects.toThrow(/lasts 301\.0 s, over the 5 minute limit/);
    const big = path.join(project, 'videos', 'big.mp4');
    writeFileSync(big, '');
    truncateSync(big, 2 * 1024 ** 3 + 1); // sparse: nothing written
    await expect(ex.start({ file: big })).rejects.toThrow(/over the 2 GB limit/);
    const text = path.join(project, 'videos', 'notes.mp4');
    writeFileSync(text, 'not a video');
    await expect(ex.start({ file: text })).rejects.toThrow(ExtractRefused);
    await expect(ex.start({ recording: 'rec-20990101-000000-ffffff' })).rejects.toThrow(/no recording/);
    expect(store.all().filter((c) => /long|big|notes/.test(c.file))).toEqual([]);
  });

  it("a playlist a run saved as .mp4 is no video: neither the host's ffprobe nor the runner's ffmpeg opens what it names", async () => {
    // A video of the person's, outside every grant; a run writes an HLS playlist naming it as an .mp4.
    const outside = path.join(h.root, 'private', 'holiday.mp4');
    mkdirSync(path.dirname(outside), { recursive: true });
    ffmpeg('-f', 'lavfi', '-i', 'color=size=16x16:rate=1', '-t', '7', '-pix_fmt', 'yuv420p', outside);
    const playlist = `#EXTM3U\\n#EXT-X-TARGETDURATION:10\\n#EXTINF:7,\\n${outside}\\n#EXT-X-ENDLIST\\n`;
    const rec = await h.run(['sh', '-c', `mkdir -p videos && printf '${playlist}' > videos/playlist.mp4`]);
    expect(rec.result.status).toBe('succeeded');
    const planted = path.join(project, 'videos', 'playlist.mp4');
    expect(readFileSync(planted, 'utf8')).toContain(outside);
    // The host's probe (unjailed) before it starts an extraction of the file:
    await expect(ex.start({ file: planted })).rejects.toThrow(/is not a video ffprobe can read/);
    // The extract runner's frames (of an imported .mp4 or a recording's video.mp4):
    await expect(sampleFrames(planted, 2, 64, h.root)).rejects.toThrow(/ffprobe/);
  });

  it('`runboard extract` does the same from the command line and says how it went', async () => {
    answer(ANSWER);
    const env = { ...process.env, RUNBOARD_HOME: path.join(h.root, 'home') };
    const cli = (...args: string[]) =>
      promisify(execFile)(process.execPath, [path.join(DIST, 'runboard.mjs'), 'extract', ...args], {
        env,
        cwd: project,
      }).then(
        (r) => ({ code: 0, ...r }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
    const ok = await cli(path.join(project, 'recordings', REC), '--extractor', 'extract-openai', '--json');
    expect(ok.code).toBe(0);
    const lines = ok.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.type)).toEqual(['extracting', 'extracted']);
    expect(lines[1]).toMatchObject({ ok: true, questions: 1 });
    expect(readFileSync(path.join(project, 'cards', `task-${REC}-2.md`), 'utf8')).toContain('Sign Ada up');
    const bad = await cli(path.join(project, 'videos', 'notes.mp4'));
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/not a video ffprobe can read[\s\S]*usage: runboard extract/);
  });
});
