/**
 * Recording → task (seed 000; docs/extraction.md): an in-app recording or an imported .mp4 becomes a
 * card's task markdown. The model call is a run of the project's `extract` flow (runner `extract`),
 * so provider keys stay with the supervisor's proxy; this side picks the input and checks it against
 * the limits, makes or marks the card, launches the run and, when it ends, puts the model's answer
 * through the gate (protocol/extraction.ts) before anything is written:
 *
 *   start ──▶ card `needs: extracting…` ──run──▶ succeeded + gate ok + TaskDetected ──▶ body = task,
 *                                         │        needs-input (open questions) | backlog (none)
 *                                         └──▶ anything else ──▶ body unchanged, `lastError` says why
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { mediaInput } from '@runboard/native/media-input';
import {
  EXTRACTION_FILE,
  gateExtraction,
  type FlowSpec,
  type RunResult,
} from '@runboard/supervisor/protocol';
import { writeAtomic, type BoardStore } from './board-store.ts';
import { cardTransition } from './card-lifecycle.ts';
import type { GrantStore } from './grant-store.ts';
import { readRegularFileText, readRunArtifactSync } from './regular-file.ts';
import { flowSpec, NoGrantError } from './launch.ts';
import type { Card, FlowConfig, ProjectConfig } from './project.ts';
import type { SupervisorClient } from './supervisor-client.ts';

/** Seed 000's limits for a recording: beyond them ingestion is refused (trim or record again). */
export const VIDEO_LIMITS = { maxDurationMs: 5 * 60_000, maxBytes: 2 * 1024 ** 3 } as const;

/** A request the person can fix (a bad input, a missing flow, a busy card): said in words. */
export class ExtractRefused extends Error {}

export interface ExtractRequest {
  /** An in-app recording: its id in the project's recordings/. */
  recording?: string | undefined;
  /** A video file to import (.mp4). */
  file?: string | undefined;
  /** The card that gets the task (default: a new card in Backlog). */
  card?: string | undefined;
  /** The flow of a new card (default: the project's first computer-use flow). */
  flow?: string | undefined;
  /** The extraction flow (default: the project's first flow with `runner: extract`). */
  extractor?: string | undefined;
}

export type ExtractOutcome =
  | { ok: true; cardId: string; runId: string; questions: number }
  | { ok: false; cardId: string; runId: string; error: string };

export interface ExtractDeps {
  store: BoardStore;
  client: SupervisorClient;
  grants: GrantStore;
  /** Whether a card has a run going (it cannot take an extraction then). */
  isActive(cardId: string): boolean;
}

interface Input {
  /** What the run reads: the recording's folder or the video file. */
  path: string;
  /** The folder the run may read (its workspace, read-only). */
  dir: string;
  /** For titles and messages. */
  label: string;
}

const execFileP = promisify(execFile);

/** A video's duration in ms (ffprobe), or why it cannot be read as a video. */
async function videoDurationMs(file: string): Promise<number> {
  let out: string;
  try {
    ({ stdout: out } = await execFileP(
      'ffprobe',
      // the demuxer pinned by the extension, only this file opened (a playlist named .mp4 is no video)
      [
        '-v',
        'error',
        '-show_entries',
        'format=duration:stream=codec_type',
        '-of',
        'json',
        ...mediaInput(file),
      ],
      { timeout: 30_000 },
    ));
  } catch (err) {
    const e = err as { code?: string; stderr?: string };
    if (e.code === 'ENOENT') throw new ExtractRefused('ffprobe is not installed (apt install ffmpeg)');
    throw new ExtractRefused(
      `${file} is not a video ffprobe can read: ${(e.stderr ?? '').trim().split('\n')[0] || 'unknown format'}`,
    );
  }
  const j = JSON.parse(out) as { format?: { duration?: string }; streams?: { codec_type?: string }[] };
  if (!j.streams?.some((s) => s.codec_type === 'video'))
    throw new ExtractRefused(`${file} holds no video stream`);
  const secs = Number(j.format?.duration);
  if (!Number.isFinite(secs)) throw new ExtractRefused(`${file}: ffprobe reports no duration`);
  return Math.round(secs * 1000);
}

/** Refuses what is beyond the limits, saying by how much and what to do. */
export function checkLimits(what: string, bytes: number, durationMs: number | undefined): void {
  if (bytes > VIDEO_LIMITS.maxBytes)
    throw new ExtractRefused(
      `${what} is ${(bytes / 1024 ** 3).toFixed(2)} GB, over the 2 GB limit: trim it or record again`,
    );
  if (durationMs !== undefined && durationMs > VIDEO_LIMITS.maxDurationMs)
    throw new ExtractRefused(
      `${what} lasts ${(durationMs / 1000).toFixed(1)} s, over the 5 minute limit: trim it or record again`,
    );
}

function slug(s: string): string {
  return (
    s
      .toLowerCase()
      .replace(/\.[a-z0-9]+$/, '')
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 60) || 'task'
  );
}

export class Extractions {
  constructor(private readonly deps: ExtractDeps) {}

  private get projectDir(): string {
    return this.deps.store.projectDir;
  }

  /** The input as the run will read it, checked against the limits. */
  async input(req: ExtractRequest): Promise<Input> {
    if ((req.recording === undefined) === (req.file === undefined))
      throw new ExtractRefused('name one input: a recording (its id) or a video file (.mp4)');
    if (req.recording !== undefined) {
      if (!/^rec-[0-9a-z-]{1,64}$/.test(req.recording))
        throw new ExtractRefused(`"${req.recording}" is not a recording id (rec-…)`);
      const dir = path.join(this.projectDir, 'recordings', req.recording);
      let meta: { endedAt?: unknown; durationMs?: unknown };
      try {
        // a run may have written the project's recordings (regular-file.ts): no FIFO, no link, bounded
        meta = JSON.parse(
          await readRegularFileText(path.join(dir, 'recording.json'), {
            noFollow: true,
            maxBytes: 1 << 20,
            within: this.projectDir,
          }),
        ) as typeof meta;
      } catch {
        throw new ExtractRefused(
          `no recording ${req.recording} in ${path.join(this.projectDir, 'recordings')}`,
        );
      }
      if (typeof meta.endedAt !== 'string')
        throw new ExtractRefused(`recording ${req.recording} is still being recorded (or its recorder died)`);
      const video = path.join(dir, 'video.mp4');
      const bytes = existsSync(video) ? statSync(video).size : 0;
      checkLimits(`recording ${req.recording}`, bytes, meta.durationMs as number | undefined);
      return { path: dir, dir, label: req.recording };
    }
    const file = path.resolve(req.file!);
    let st;
    try {
      st = statSync(file);
    } catch {
      throw new ExtractRefused(`no file ${file}`);
    }
    if (!st.isFile()) throw new ExtractRefused(`${file} is not a regular file`);
    if (!/\.mp4$/i.test(file)) throw new ExtractRefused(`${file} is not an .mp4 video (import an .mp4)`);
    checkLimits(path.basename(file), st.size, undefined);
    checkLimits(path.basename(file), st.size, await videoDurationMs(file));
    return { path: file, dir: path.dirname(file), label: path.basename(file) };
  }

  /** The project's extraction flow: the one named, else the first with `runner: extract`. */
  private extractFlow(name?: string): [string, FlowConfig] {
    const found = Object.entries(this.flows()).find(([n, f]) =>
      name === undefined ? f.runner === 'extract' : n === name,
    );
    if (found && found[1].runner !== 'extract')
      throw new ExtractRefused(
        `flow ${name} is a ${found[1].runner} flow, not an extraction (runner: extract)`,
      );
    if (!found && name !== undefined) throw new ExtractRefused(`no flow ${name} in config.yaml`);
    if (!found)
      throw new ExtractRefused(
        'config.yaml has no flow with `runner: extract`; add one, e.g. `extract: {runner: extract, prompt: ../prompts/task_extraction}` (docs/extraction.md)',
      );
    return found;
  }

  private flows(): Record<string, FlowConfig> {
    return this.deps.store.config.flows;
  }

  /** The card that gets the task: the one named, or a new one in Backlog. */
  private targetCard(req: ExtractRequest, input: Input): Card {
    const { store } = this.deps;
    if (req.card !== undefined) {
      const card = store.get(req.card);
      if (!card) throw new ExtractRefused(`no card ${req.card}`);
      if (this.deps.isActive(req.card))
        throw new ExtractRefused(`card ${req.card} has a run going: cancel it first`);
      return card;
    }
    const flows = this.flows();
    const flow = req.flow ?? Object.entries(flows).find(([, f]) => f.runner === 'computer-use')?.[0];
    if (!flow || !Object.hasOwn(flows, flow))
      throw new ExtractRefused(
        flow
          ? `no flow ${flow} in config.yaml (flows: ${Object.keys(flows).join(', ')})`
          : 'config.yaml has no computer-use flow for the new card: name one (flow)',
      );
    const base = `task-${slug(input.label)}`;
    let file = path.join(store.cardsDir, `${base}.md`);
    for (let n = 2; existsSync(file); n++) file = path.join(store.cardsDir, `${base}-${n}.md`);
    const front = {
      title: `Task from ${input.label}`,
      flow,
      status: cardTransition('created', undefined, 'backlog'),
      recording: input.label,
    };
    const text = `---\n${YAML.stringify(front)}---\n# Task\n(being extracted from ${input.label})\n`;
    writeAtomic(file, text);
    const card = store.ingestNew(file);
    if (!card) throw new Error(`the new card ${file} could not be read back`);
    return card;
  }

  /**
   * Starts an extraction; `done` settles when the run has ended and the card has been written (or
   * left as it was, saying why). Refusals (ExtractRefused, NoGrantError) come before anything is made.
   */
  async start(
    req: ExtractRequest,
  ): Promise<{ cardId: string; runId: string; done: Promise<ExtractOutcome> }> {
    const input = await this.input(req);
    const [flowName, flow] = this.extractFlow(req.extractor);
    if (!flow.prompt)
      throw new ExtractRefused(`flow ${flowName} has no prompt folder (prompt: ../prompts/task_extraction)`);
    const promptDir = path.resolve(this.projectDir, flow.prompt);
    const spec = extractionSpec(
      flowName,
      flow,
      this.projectDir,
      this.deps.store.config,
      promptLlm(promptDir),
    );
    const grant = this.deps.grants.find(input.dir);
    if (!grant) throw new NoGrantError(input.dir);
    const card = this.targetCard(req, input);
    const cardId = String(card.front.id);
    let runId: string;
    try {
      ({ runId } = await this.deps.client.launch({
        card: { path: card.file, project: this.projectDir, id: cardId, title: card.front.title },
        flow: { ...spec, extract: { ...spec.extract, input: input.path } },
        workspace: input.dir,
        grant,
        paths: [input.path],
      }));
    } catch (err) {
      this.deps.store.update(cardId, {
        lastError: `task extraction could not start: ${(err as Error).message}`,
      });
      throw err;
    }
    this.deps.store.update(cardId, {
      needs: `the task is being extracted from ${input.label} (run ${runId})`,
      extraction: runId,
      lastError: undefined,
    });
    return { cardId, runId, done: this.follow(cardId, runId) };
  }

  /**
   * Follows the extractions cards say are going (front matter `extraction: <run id>`), e.g. after the
   * board was restarted while one ran: each is applied when its run ends (at once when it has ended).
   */
  resume(): Promise<ExtractOutcome[]> {
    return Promise.all(
      this.deps.store
        .all()
        .filter((c) => typeof c.front.extraction === 'string')
        .map((c) => this.follow(String(c.front.id), String(c.front.extraction))),
    );
  }

  private follow(cardId: string, runId: string): Promise<ExtractOutcome> {
    return new Promise<RunResult>((resolve, reject) => {
      this.deps.client
        .attach(runId, { onEnd: resolve, onLost: reject })
        .then((now) => {
          if (now.status !== 'running') resolve(now);
        })
        .catch(reject);
    }).then(
      (result) => this.apply(cardId, result),
      (err: Error) => this.fail(cardId, runId, `lost track of the extraction run ${runId}: ${err.message}`),
    );
  }

  private fail(cardId: string, runId: string, error: string): ExtractOutcome {
    if (this.deps.store.get(cardId))
      this.deps.store.update(cardId, { needs: undefined, extraction: undefined, lastError: error });
    return { ok: false, cardId, runId, error };
  }

  /** The run's answer through the gate: only a detected task is written, without the control fields. */
  apply(cardId: string, run: RunResult): ExtractOutcome {
    const { runId } = run;
    if (run.status !== 'succeeded')
      return this.fail(
        cardId,
        runId,
        `task extraction ${run.status}: ${run.summary || run.termination?.detail || 'no reason given'}`,
      );
    let answer: string;
    try {
      answer = readRunArtifactSync(run.logDir, EXTRACTION_FILE);
    } catch (err) {
      return this.fail(cardId, runId, `task extraction left no answer: ${(err as Error).message}`);
    }
    const gate = gateExtraction(answer);
    if (!gate.ok)
      return this.fail(
        cardId,
        runId,
        `task extraction gave no usable task: ${gate.why}; the card is unchanged`,
      );
    if (!gate.taskDetected)
      return this.fail(
        cardId,
        runId,
        `no task found in the recording (${gate.status}: ${gate.noTaskReason}); the card is unchanged`,
      );
    const card = this.deps.store.get(cardId);
    if (!card) return this.fail(cardId, runId, `card ${cardId} is gone`);
    this.deps.store.update(
      cardId,
      {
        needs: undefined,
        extraction: undefined,
        lastError: undefined,
        status: cardTransition(
          'extracted',
          card.front.status,
          gate.questions > 0 ? 'needs-input' : 'backlog',
        ),
      },
      () => gate.markdown,
    );
    return { ok: true, cardId, runId, questions: gate.questions };
  }
}

/**
 * The FlowSpec of an extraction flow, before its input: the flow's own provider and model, else its
 * profile's (`profile:`, from the effective config), else the prompt folder's `llm`; read-only.
 */
export function extractionSpec(
  flowName: string,
  flow: FlowConfig,
  projectDir: string,
  config: ProjectConfig,
  llm: { provider?: string; model?: string },
): FlowSpec {
  const spec = flowSpec(flowName, flow, projectDir, config);
  const provider = spec.provider ?? llm.provider;
  if (!provider)
    throw new ExtractRefused(
      `neither flow ${flowName}${flow.profile ? ` (profile ${flow.profile})` : ''} nor ${path.resolve(projectDir, flow.prompt ?? '.')}/config.yaml names a provider (llm.provider)`,
    );
  const model = spec.model ?? llm.model;
  return { ...spec, provider, ...(model ? { model } : {}), readOnly: true };
}

/** The `llm` of a prompt folder's config.yaml (provider, model), or refuses saying why. */
function promptLlm(dir: string): { provider?: string; model?: string } {
  const file = path.join(dir, 'config.yaml');
  let cfg: unknown;
  try {
    cfg = YAML.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ExtractRefused(`cannot read the extraction prompt's ${file}: ${(err as Error).message}`);
  }
  const c = cfg as { version?: unknown; llm?: { provider?: unknown; model?: unknown } } | null;
  if (!c || typeof c.version !== 'number' || !c.llm || typeof c.llm !== 'object')
    throw new ExtractRefused(`${file} needs at least \`version\` and \`llm\``);
  return {
    ...(typeof c.llm.provider === 'string' ? { provider: c.llm.provider } : {}),
    ...(typeof c.llm.model === 'string' ? { model: c.llm.model } : {}),
  };
}
