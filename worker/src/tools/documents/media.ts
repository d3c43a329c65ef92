// analyze_media: an image, or a short video (four frames taken by ffmpeg; GLM takes the whole video),
// described by the flow's vision model (its vision profile) through the run's vision route of the
// supervisor's model proxy: the run never holds a provider key, and the route makes this one request
// to the profile's provider and model only (protocol/vision.ts). The answer is the seed's strict JSON
// (summary, tags, text); anything else is an error saying so, as are a missing or placeholder profile
// (what to set) and a run the supervisor gave no vision route.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { visionApi, visionRequestPath, visionTakesVideo } from '@runboard/supervisor/protocol/data';
import { durationArgs, mediaInput, parseDuration, VIDEO_DEMUXERS } from '@runboard/native/media-input';
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

/** The body of the vision request in the profile's wire format (protocol/vision.ts). */
function requestBody(v: VisionAccess, images: Image[]): unknown {
  const maxTokens = v.maxTokens ?? 1024;
  const b64 = (i: Image): string => i.data.toString('base64');
  const api = visionApi(v.provider);
  if (api === 'gemini')
    return {
      contents: [
        {
          role: 'user',
          parts: [
            ...images.map((i) => ({ inline_data: { mime_type: i.mime, data: b64(i) } })),
            { text: PROMPT },
          ],
        },
      ],
      generationConfig: { maxOutputTokens: maxTokens },
    };
  const media = images.map((i) =>
    api === 'messages'
      ? { type: 'image', source: { type: 'base64', media_type: i.mime, data: b64(i) } }
      : i.video
        ? { type: 'video_url', video_url: { url: `data:${i.mime};base64,${b64(i)}` } }
        : { type: 'image_url', image_url: { url: `data:${i.mime};base64,${b64(i)}` } },
  );
  return {
    model: v.model,
    max_tokens: maxTokens,
    messages: [{ role: 'user', content: [...media, { type: 'text', text: PROMPT }] }],
  };
}

/** The answer's text in the profile's wire format. */
function answerText(api: ReturnType<typeof visionApi>, json: unknown): string {
  const j = json as {
    content?: { type: string; text?: string }[];
    choices?: { message?: { content?: string | null } }[];
    candidates?: { content?: { parts?: { text?: string }[] } }[];
  };
  if (api === 'messages')
    return (j.content ?? []).map((c) => (c.type === 'text' ? (c.text ?? '') : '')).join('');
  if (api === 'gemini') return (j.candidates?.[0]?.content?.parts ?? []).map((p) => p.text ?? '').join('');
  return j.choices?.[0]?.message?.content ?? '';
}

/** One request to the vision model through the run's vision route. */
async function ask(v: VisionAccess, token: string, images: Image[]): Promise<string> {
  const api = visionApi(v.provider);
  const url = `${v.baseUrl}${visionRequestPath(api, v.model)}`;
  const headers: Record<string, string> =
    api === 'messages'
      ? { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' }
      : api === 'gemini'
        ? { 'content-type': 'application/json', 'x-goog-api-key': token }
        : { 'content-type': 'application/json', authorization: `Bearer ${token}` };
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify(requestBody(v, images)),
      signal: AbortSignal.timeout(120_000),
    });
  } catch (e) {
    throw new DocumentError(
      `the vision model could not be reached through the model proxy: ${(e as Error).message}`,
    );
  }
  const text = await res.text();
  if (!res.ok)
    throw new DocumentError(
      `the vision model (${v.provider} ${v.model}) answered ${res.status}: ${text.slice(0, 300)}`,
    );
  try {
    return answerText(api, JSON.parse(text));
  } catch {
    throw new DocumentError(
      `the vision model (${v.provider} ${v.model}) answered something other than JSON: ${text.slice(0, 300)}`,
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
