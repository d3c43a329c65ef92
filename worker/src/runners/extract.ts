/**
 * The `extract` runner: a recording (or an imported .mp4) → task markdown (seed 000; docs/extraction.md).
 * Gemini gets the video itself through the Files API (upload, poll until ACTIVE, generateContent);
 * the other providers get frames sampled from the video (ffmpeg) and, for an in-app recording, the
 * recorder's event list. The model's answer goes to `artifacts/task.md` as it came; the runner
 * checks it against the output contract to say at once what is wrong, and the host checks it again
 * before it writes the card. Prompt text lives in the flow's prompt folder, none in code.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { ARTIFACTS_DIR, EXTRACTION_FILE, gateExtraction, type Metrics } from '@runboard/supervisor/protocol';
import { defaultApi, describeModelError, ModelClient, type CallApi, type Image } from '../models/client.ts';
import { fill } from '../models/prompt.ts';
import { MAX_RETRY_WAIT_MS, retryDecision } from '../models/retry.ts';
import type { Runner, RunnerContext, RunnerOutcome } from './runner.ts';
import type { ManifestStep } from '@runboard/native';
import { durationArgs, mediaInput, parseDuration } from '@runboard/native/media-input';

const execFileP = promisify(execFile);

const DEFAULTS = {
  frames: 12,
  frameWidth: 768,
  activeTimeoutMs: 5 * 60_000,
  pollMs: 1000,
  maxOutputTokens: 8192,
  requestTimeoutMs: 300_000,
  maxRetries: 2,
};

interface ExtractionConfig {
  version: number;
  llm: { provider?: string; model?: string; max_output_tokens?: number; poll_ms?: number };
  inputs: { video: string; frames: string; screenshots: string };
  frame_caption: string;
  events_heading: string;
  no_events: string;
}

function loadPrompt(folder: string): { template: string; config: ExtractionConfig } {
  const read = (f: string): string => {
    try {
      return readFileSync(path.join(folder, f), 'utf8');
    } catch (err) {
      throw new Error(`cannot read the extraction prompt ${path.join(folder, f)}: ${(err as Error).message}`);
    }
  };
  const template = read('prompt.md');
  const file = path.join(folder, 'config.yaml');
  const c = parse(read('config.yaml')) as Partial<ExtractionConfig> | null;
  if (!c || typeof c.version !== 'number' || !c.llm)
    throw new Error(`${file} needs at least \`version\` and \`llm\``);
  for (const k of ['frame_caption', 'events_heading', 'no_events'] as const)
    if (typeof c[k] !== 'string') throw new Error(`${file} has no ${k}`);
  for (const k of ['video', 'frames', 'screenshots'] as const)
    if (typeof c.inputs?.[k] !== 'string') throw new Error(`${file} has no inputs.${k}`);
  return { template, config: c as ExtractionConfig };
}

const clock = (ms: number): string => {
  const s = Math.max(0, ms) / 1000;
  return `${Math.floor(s / 60)}:${(s % 60).toFixed(1).padStart(4, '0')}`;
};

/** One manifest step as a line for the model (what the person did, where). */
export function describeStep(s: ManifestStep): string {
  const a = s.action;
  const on = (e: ManifestStep['element']): string =>
    e ? ` on ${e.role}${e.name ? ` "${e.name}"` : ''}` : '';
  let what: string;
  switch (a.type) {
    case 'type':
      what =
        'secret' in a
          ? 'typed a secret into a password field (not recorded)'
          : `type ${JSON.stringify(a.text)}`;
      what += on(s.focus);
      break;
    case 'press':
      what = `press ${a.key}${on(s.focus)}`;
      break;
    case 'click':
      what = `${a.count === 2 ? 'double-' : a.count === 3 ? 'triple-' : ''}click ${a.button} at (${a.x}, ${a.y})${on(s.element)}`;
      break;
    case 'drag':
      what = `drag ${a.button} from (${a.from.join(', ')}) to (${a.to.join(', ')})${on(s.element)}`;
      break;
    case 'scroll':
      what = `scroll (${a.dx}, ${a.dy}) at (${a.x}, ${a.y})${on(s.element)}`;
      break;
    case 'extract':
      what = `the person marked something to read here: ${JSON.stringify(a.query)}${a.candidates?.length ? ` (e.g. ${a.candidates.join(', ')})` : ''}`;
      break;
  }
  const where = s.window
    ? ` in ${s.window.app || 'a window'}${s.window.title ? ` "${s.window.title}"` : ''}`
    : '';
  const note = s.details ? ` — the person's note: ${JSON.stringify(s.details)}` : '';
  return `${clock(s.at)} step ${s.step}: ${what}${where}${note}`;
}

function readManifest(dir: string): ManifestStep[] {
  const file = path.join(dir, 'manifest.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as ManifestStep);
}

async function videoSeconds(file: string): Promise<number> {
  // a recording's video.mp4 or an imported .mp4: read as what its extension says (media-input.ts)
  const s = parseDuration((await execFileP('ffprobe', durationArgs(file))).stdout);
  if (s === undefined) throw new Error(`ffprobe reports no duration for ${file}`);
  return s;
}

/** `count` frames evenly spread over the video (the middle of each slice), JPEG, at most `width` wide. */
export async function sampleFrames(
  video: string,
  count: number,
  width: number,
  tmp: string,
): Promise<{ data: Buffer; atMs: number }[]> {
  const secs = await videoSeconds(video);
  const dir = mkdtempSync(path.join(tmp, 'frames-'));
  try {
    const out: { data: Buffer; atMs: number }[] = [];
    for (let i = 0; i < count; i++) {
      const t = ((i + 0.5) * secs) / count;
      const file = path.join(dir, `f${i}.jpg`);
      await execFileP('ffmpeg', [
        '-v',
        'error',
        '-nostdin',
        '-ss',
        t.toFixed(3),
        ...mediaInput(video),
        '-frames:v',
        '1',
        '-vf',
        `scale='min(${width},iw)':-2`,
        '-q:v',
        '5',
        '-y',
        file,
      ]);
      if (existsSync(file)) out.push({ data: readFileSync(file), atMs: Math.round(t * 1000) });
    }
    if (!out.length) throw new Error(`ffmpeg gave no frame of ${video}`);
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export class ExtractRunner implements Runner {
  private readonly abort = new AbortController();

  cancel(): void {
    this.abort.abort();
  }

  async run(ctx: RunnerContext): Promise<RunnerOutcome> {
    const { spec } = ctx;
    const metrics: Metrics = {};
    const fail = (summary: string): RunnerOutcome => ({ status: 'failed', exitCode: null, summary, metrics });
    const ex = spec.flow.extract ?? {};
    if (!spec.model)
      return fail(
        `flow "${spec.flow.name}" has no provider: an extraction needs \`provider:\` (gemini, openai, anthropic)`,
      );
    if (!spec.flow.prompt)
      return fail(`flow "${spec.flow.name}" has no prompt folder (prompts/task_extraction)`);
    if (!ex.input)
      return fail(
        'no input: an extraction run is started by `runboard extract` or the board, which name the recording',
      );
    let prompt: ReturnType<typeof loadPrompt>;
    try {
      prompt = loadPrompt(spec.flow.prompt);
    } catch (err) {
      return fail((err as Error).message);
    }
    const cfg = prompt.config;
    const provider = spec.model.provider;
    const api: CallApi = ex.api ?? defaultApi(provider);
    const model = spec.model.model ?? cfg.llm.model ?? 'gemini-2.5-pro';
    const artifacts = spec.artifactsDir ?? path.join(ctx.env.TMPDIR ?? '/tmp', ARTIFACTS_DIR);
    mkdirSync(artifacts, { recursive: true });
    // What was recorded: a recording's folder (its video, its events, its screenshots) or a video file.
    const isDir = statSync(ex.input, { throwIfNoEntry: false })?.isDirectory() ?? false;
    const video = isDir ? path.join(ex.input, 'video.mp4') : ex.input;
    const hasVideo = existsSync(video);
    const steps = isDir ? readManifest(ex.input) : [];
    if (!hasVideo && !steps.length) return fail(`${ex.input} holds neither a video nor recorded steps`);
    const events = steps.length
      ? `${cfg.events_heading}\n${steps.map(describeStep).join('\n')}`
      : cfg.no_events;
    Object.assign(metrics, {
      api,
      model,
      steps: steps.length,
      videoBytes: hasVideo ? statSync(video).size : 0,
    });
    const client = new ModelClient(api, spec.model, DEFAULTS.requestTimeoutMs);
    const maxOutputTokens = cfg.llm.max_output_tokens ?? DEFAULTS.maxOutputTokens;
    const signal = this.abort.signal;
    let uploaded: string | undefined;
    try {
      let images: Image[] = [];
      let input: string;
      let file: { uri: string; mimeType: string } | undefined;
      if (api === 'gemini' && hasVideo) {
        ctx.progress(0.1, 'uploading the video (Files API)');
        const t0 = performance.now();
        const f = await client.gemini!.uploadVideo(
          video,
          'video/mp4',
          {
            pollMs: cfg.llm.poll_ms ?? DEFAULTS.pollMs,
            activeTimeoutMs: ex.activeTimeoutMs ?? DEFAULTS.activeTimeoutMs,
            signal,
          },
          (state, polls) =>
            ctx.progress(0.3, `the video is ${state.toLowerCase()} at the provider (poll ${polls})`),
        );
        uploaded = f.name;
        file = { uri: f.uri, mimeType: f.mimeType };
        Object.assign(metrics, {
          uploadBytes: f.sizeBytes,
          uploadMs: Math.round(performance.now() - t0),
          activePolls: f.polls,
        });
        input = cfg.inputs.video;
      } else {
        const count = ex.frames ?? DEFAULTS.frames;
        const width = ex.frameWidth ?? DEFAULTS.frameWidth;
        ctx.progress(0.2, hasVideo ? `sampling ${count} frames` : 'reading the recorded screenshots');
        const shots = hasVideo
          ? await sampleFrames(video, count, width, ctx.env.TMPDIR ?? '/tmp')
          : evenly(steps, count).map((s) => ({
              data: readFileSync(path.join(ex.input!, s.screenshot)),
              atMs: s.at,
              png: s.screenshot.endsWith('.png'),
            }));
        images = shots.map((s, i) => ({
          data: s.data,
          mime: 'png' in s && s.png ? 'image/png' : 'image/jpeg',
          caption: fill(cfg.frame_caption, {
            INDEX: String(i + 1),
            COUNT: String(shots.length),
            TIME: clock(s.atMs),
          }),
        }));
        input = fill(hasVideo ? cfg.inputs.frames : cfg.inputs.screenshots, { COUNT: String(images.length) });
        Object.assign(metrics, {
          frames: images.length,
          frameBytes: images.reduce((n, im) => n + im.data.length, 0),
        });
      }
      ctx.progress(0.6, `asking ${provider} (${model})`);
      const request = {
        prompt: fill(prompt.template, { INPUT: input }),
        images,
        after: events,
        ...(file ? { file } : {}),
      };
      // A small retry budget for transient failures (connection, 429, 5xx), as the computer-use loop
      // has: a flaky network should not cost the person a failed extraction.
      let r;
      for (let attempt = 0; ; attempt++) {
        try {
          r = await client.call(request, {
            model,
            maxOutputTokens,
            timeoutMs: DEFAULTS.requestTimeoutMs,
            signal,
          });
          break;
        } catch (err) {
          const d = retryDecision(err, attempt, {
            maxRetries: DEFAULTS.maxRetries,
            maxWaitMs: MAX_RETRY_WAIT_MS,
          });
          if (!d.retry || signal.aborted) throw err;
          ctx.log(
            'warn',
            `model request failed (${describeModelError(err, provider)}); retrying in ${Math.round(d.waitMs)} ms`,
          );
          metrics.retries = attempt + 1;
          await new Promise((res) => setTimeout(res, d.waitMs));
        }
      }
      Object.assign(metrics, {
        requestBytes: r.requestBytes,
        inputTokens: r.usage.input,
        outputTokens: r.usage.output,
      });
      writeFileSync(path.join(artifacts, EXTRACTION_FILE), r.text);
      const gate = gateExtraction(r.text);
      if (!gate.ok) return fail(`the model's answer is not a task: ${gate.why}`);
      metrics.questions = gate.questions;
      metrics.taskDetected = gate.taskDetected;
      return {
        status: 'succeeded',
        exitCode: 0,
        summary: gate.taskDetected
          ? `task extracted (${gate.questions} open question${gate.questions === 1 ? '' : 's'})`
          : `no task found: ${gate.noTaskReason}`,
        metrics,
      };
    } catch (err) {
      if (signal.aborted) return fail('cancelled');
      return fail(describeModelError(err, provider));
    } finally {
      if (uploaded)
        await client
          .gemini!.deleteFile(uploaded)
          .catch((err: Error) =>
            ctx.log('warn', `could not delete the uploaded video ${uploaded}: ${err.message}`),
          );
    }
  }
}

function evenly<T>(xs: T[], n: number): T[] {
  if (xs.length <= n) return xs;
  return Array.from({ length: n }, (_, i) => xs[Math.floor(((i + 0.5) * xs.length) / n)]!);
}
