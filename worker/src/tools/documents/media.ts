// analyze_media: an image, or a short video (four frames taken by ffmpeg; GLM takes the whole video),
// described by the flow's vision model (its vision profile) through the run's vision route of the
// supervisor's model proxy: the run never holds a provider key, and the route makes this one request
// to the profile's provider and model only (protocol/vision.ts). The request is the model stack's
// (worker/src/models), as every runner's, so the proxy counts and logs it alike. The answer is the
// seed's strict JSON (summary, tags, text); anything else is an error saying so, as are a missing or
// placeholder profile (what to set) and a run the supervisor gave no vision route.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { visionApi, visionTakesVideo } from '@runboard/supervisor/protocol/data';
import { durationArgs, mediaInput, parseDuration, VIDEO_DEMUXERS } from '@runboard/native/media-input';
import type { CallInput, CallOptions, Image as ModelImage } from '../../models/types.ts';
import { DocumentError, insideWorkspace, relativeOrAbsolute } from './paths.ts';
import type { DocumentScope, VisionAccess } from './scope.ts';

const run = promisify(execFile);

const IMAGE: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
};
/** Videos: the extensions the one media helper reads, each with its demuxer pinned (@runboard/native). */
const VIDEO = VIDEO_DEMUXERS;
/** The MIME type of a video sent whole (GLM's video_url). */
const VIDEO_MIME: Record<string, string> = {
  '.mp4': 'video/mp4',
  '.m4v': 'video/mp4',
  '.mov': 'video/quicktime',
  '.webm': 'video/webm',
  '.mkv': 'video/x-matroska',
  '.avi': 'video/x-msvideo',
};
/** Larger videos are refused rather than sent whole (BigModel's own limit for a base64 video is about this). */
const MAX_VIDEO_BYTES = 20_000_000;
/** Frames of a video sent to the model, spread over its length. */
const FRAMES = 4;
/** Larger images are refused rather than sent (the providers' own limits are about this size). */
const MAX_IMAGE_BYTES = 10_000_000;

/** The instruction sent with the media: the seed's contract, one JSON object. */
const PROMPT =
  'Describe this media for an agent that cannot see it. Answer with exactly one JSON object and nothing else: ' +
  '{"summary": "what it shows, in one or two sentences", "tags": ["short", "labels"], "text": "any text visible in it, verbatim, or empty"}.' +
  ' For a video (or frames of it, in order) describe what happens across it.';

const PLACEHOLDER = /^<.*>$|placeholder|changeme|your[-_ ]?model|^todo$|^x+$/i;

interface Image {
  mime: string;
  data: Buffer;
  /** A whole video (GLM's video_url), not an image. */
  video?: boolean;
}

function configError(scope: DocumentScope, why: string): DocumentError {
  return new DocumentError(
    `analyze_media cannot run: ${why}. Tell the person to add \`visionProfile: NAME\` to flow "${scope.flowName ?? '?'}" in config.yaml and a \`vision_profiles: { NAME: { provider: ..., model: ... } }\` entry to their user config (\`runboard config --show\` says where that is), then run the card again; do not guess what the media shows`,
  );
}

/** The flow's vision access, or the configuration error that tells the person what to set. */
function visionOf(scope: DocumentScope): VisionAccess {
  const v = scope.vision;
  if (!v) throw configError(scope, 'this flow has no vision profile');
  if (PLACEHOLDER.test(v.model.trim()))
    throw configError(scope, `vision profile "${v.profile}" still has a placeholder model ("${v.model}")`);
  if (!v.baseUrl)
    throw configError(
      scope,
      `the supervisor gave this run no route to provider ${v.provider} of vision profile "${v.profile}" (the run's log says why: a provider with no API key is given one with \`runboard key set\`, an unknown provider is added with RUNBOARD_PROVIDER_<NAME>_URL)`,
    );
  return v;
}

async function videoFrames(file: string): Promise<Image[]> {
  // only this file, read as the format its extension says: nothing it names is opened
  const input = mediaInput(file);
  const tool = (cmd: string, args: string[]) =>
    run(cmd, args, { maxBuffer: 1 << 20 }).catch((e: NodeJS.ErrnoException & { stderr?: string }) => {
      throw new DocumentError(
        e.code === 'ENOENT'
          ? `analyze_media reads videos with ${cmd}, which is not installed (Debian package ffmpeg)`
          : `${path.basename(file)}: ${cmd} could not read it (${(e.stderr ?? e.message).trim().split('\n').pop()})`,
      );
    });
  const duration = parseDuration((await tool('ffprobe', durationArgs(file))).stdout);
  if (duration === undefined)
    throw new DocumentError(`${path.basename(file)}: not a video ffprobe can read (no duration)`);
  const dir = await mkdtemp(path.join(tmpdir(), 'rb-frames-'));
  try {
    const frames: Image[] = [];
    for (let i = 0; i < FRAMES; i++) {
      const out = path.join(dir, `f${i}.jpg`);
      const at = ((i + 0.5) * duration) / FRAMES;
      await tool('ffmpeg', [
        '-v',
        'error',
        '-ss',
        at.toFixed(3),
        ...input,
        '-frames:v',
        '1',
        '-vf',
        'scale=min(1024\\,iw):-2',
        '-y',
        out,
      ]);
      const data = await readFile(out).catch(() => {
        throw new DocumentError(`${path.basename(file)}: ffmpeg took no frame at ${at.toFixed(1)} s of it`);
      });
      frames.push({ mime: 'image/jpeg', data });
    }
    return frames;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The first JSON object of an answer (a code fence tolerated), checked against the contract. */
export function parseDescription(answer: string): { summary: string; tags: string[]; text: string } {
  const m = /\{[\s\S]*\}/.exec(answer);
  let v: unknown;
  try {
    v = m ? JSON.parse(m[0]) : undefined;
  } catch {
    v = undefined;
  }
  const o = v as { summary?: unknown; tags?: unknown; text?: unknown } | undefined;
  if (!o || typeof o.summary !== 'string')
    throw new DocumentError(
      `the vision model did not answer the JSON asked for ({"summary", "tags", "text"}); it said: ${JSON.stringify(answer.slice(0, 300))}`,
    );
  return {
    summary: o.summary,
    tags: Array.isArray(o.tags) ? o.tags.filter((t): t is string => typeof t === 'string') : [],
    text: typeof o.text === 'string' ? o.text : '',
  };
}

/**
 * One request to the vision model through the run's vision route, in the profile's wire format, made by
 * the model stack every runner uses (worker/src/models: one file per format, through the official SDKs):
 * the media first, then the instruction. The SDKs are loaded at the first call (the tools' server starts
 * with every agent run; most never describe media).
 */
async function ask(v: VisionAccess, token: string, media: Image[]): Promise<string> {
  const api = visionApi(v.provider);
  const to = { baseUrl: v.baseUrl!, token };
  const o: CallOptions = { model: v.model, maxOutputTokens: v.maxTokens ?? 1024, timeoutMs: 120_000 };
  const video = media.find((m) => m.video);
  const input: CallInput = video
    ? { prompt: '', video: { mime: video.mime, data: video.data }, after: PROMPT }
    : {
        prompt: '',
        images: media.map((m) => ({ mime: m.mime as ModelImage['mime'], data: m.data })),
        after: PROMPT,
      };
  // loaded at the first call: the document tools' server starts with every agent run, most never ask
  const { describeModelError } = await import('../../models/errors.ts');
  try {
    const r =
      api === 'gemini'
        ? await new (await import('../../models/gemini.ts')).GeminiClient(to, o.timeoutMs).generate(input, o)
        : api === 'messages'
          ? await (
              await import('../../models/messages.ts')
            ).callMessages((await import('../../models/sdk.ts')).anthropicSdk(to, o.timeoutMs), input, o)
          : await (
              await import('../../models/chat.ts')
            ).callChat((await import('../../models/sdk.ts')).openaiSdk(to, o.timeoutMs), input, o);
    return r.text;
  } catch (e) {
    throw new DocumentError(
      `the vision model (${v.provider} ${v.model}): ${describeModelError(e, v.provider)}`,
    );
  }
}

export async function analyzeMedia(
  scope: DocumentScope,
  file: string,
  mediaType: 'image' | 'video' | undefined,
  token: string | undefined,
): Promise<string> {
  const abs = insideWorkspace(scope.workspace, file, scope.allow);
  const ext = path.extname(abs).toLowerCase();
  const kind = mediaType ?? (IMAGE[ext] ? 'image' : VIDEO[ext] ? 'video' : undefined);
  // the extension decides how the file is read, whatever media_type says
  if (!kind || (kind === 'image' ? !IMAGE[ext] : !VIDEO[ext]))
    throw new DocumentError(
      `${path.basename(file)}: analyze_media describes images (${Object.keys(IMAGE).join(' ')}) and videos (${Object.keys(VIDEO).join(' ')})`,
    );
  const info = await stat(abs).catch(() => {
    throw new DocumentError(`${file}: no such file in the workspace`);
  });
  if (!info.isFile()) throw new DocumentError(`${file} is not a file`);
  const v = visionOf(scope);
  if (!token) throw configError(scope, 'the run has no token for its vision route');
  if (kind === 'image' && info.size > MAX_IMAGE_BYTES)
    throw new DocumentError(
      `${file}: ${info.size} bytes is more than the ${MAX_IMAGE_BYTES} an image may have here`,
    );
  const whole = kind === 'video' && visionTakesVideo(v.provider, v.model);
  if (whole && info.size > MAX_VIDEO_BYTES)
    throw new DocumentError(
      `${file}: ${info.size} bytes is more than the ${MAX_VIDEO_BYTES} a video sent to ${v.model} may have; cut it shorter`,
    );
  const images: Image[] =
    kind === 'image'
      ? [{ mime: IMAGE[ext]!, data: await readFile(abs) }]
      : whole
        ? [{ mime: VIDEO_MIME[ext]!, data: await readFile(abs), video: true }]
        : await videoFrames(abs);
  const d = parseDescription(await ask(v, token, images));
  return JSON.stringify({
    path: relativeOrAbsolute(insideWorkspace(scope.workspace, '.'), abs),
    media_type: kind,
    ...(kind === 'video' && !whole ? { frames: images.length } : {}),
    model: v.model,
    ...d,
  });
}
