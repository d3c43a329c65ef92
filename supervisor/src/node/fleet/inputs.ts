/**
 * What a run reads besides its card and workspace, shipped with its job to the host of the fleet that
 * runs it: the card's own folder (its workflow, schema.json), a reflect card's recording, the flow's
 * prompt folder, an extraction's input (a recording's folder or a video). The board's side reads them
 * (regular files only, never through a link, bounded) and puts their bytes in Redis beside the job; the
 * job carries their names, sizes and digests. The host writes them as new files under the job's own
 * folder (`<fleet cards dir>/<run id>/`, made by the host, 0700) and points the run at that copy: no
 * path of the job is ever used as it is, and a name is only a relative path of plain components under
 * one of four known places.
 *
 *   project/cards/card.md        the card's text (written by the host from the job)
 *   project/cards/card/…         the card's folder
 *   project/recordings/<id>/…    a reflect card's recording (its video left out: reflect reads frames)
 *   prompt/…                     the flow's prompt folder
 *   input/<name>[/…]             an extraction's input
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Redis } from 'ioredis';
import * as z from 'zod/mini';
import { ARTIFACT_MAX_BYTES, ARTIFACTS_MAX_FILES, RUN_ARTIFACTS_MAX_BYTES } from './artifacts.ts';

/** The same caps as a run's artifacts: per file, and for all of a run's inputs together. */
export const INPUT_MAX_BYTES = ARTIFACT_MAX_BYTES;
export const RUN_INPUTS_MAX_BYTES = RUN_ARTIFACTS_MAX_BYTES;
export const INPUTS_MAX_FILES = ARTIFACTS_MAX_FILES;
const MAX_DEPTH = 8;
const PLACES = ['project/cards/card/', 'project/recordings/', 'prompt/', 'input/'];
const RECORDING_ID = /^rec-\d{8}-\d{6}-[0-9a-f]{6}$/;

/** Why `name` is not a name of a shipped input, or null when it is one. */
export function badInputName(name: string): string | null {
  if (name.length === 0 || Buffer.byteLength(name) > 1024) return 'its length';
  if (name.includes('\0') || name.includes('\\')) return 'a NUL byte or a backslash';
  if (name.startsWith('/')) return 'an absolute path';
  const parts = name.split('/');
  if (parts.length > MAX_DEPTH + 1) return `more than ${MAX_DEPTH} folders`;
  for (const p of parts) {
    if (p === '' || p === '.' || p === '..') return `a "${p}" component`;
    if (Buffer.byteLength(p) > 255) return 'a component longer than 255 bytes';
  }
  if (!PLACES.some((p) => name.startsWith(p))) return `a place other than ${PLACES.join(', ')}`;
  return null;
}

const InputName = z
  .string()
  .check(
    z.refine((s) => badInputName(s) === null, { message: 'not a plain relative name of a shipped input' }),
  );

/** The job's list of its shipped inputs (the bytes are in Redis, under `inputsKey(runId)`). */
export const RunInputs = z.object({
  files: z
    .array(
      z.object({
        name: InputName,
        size: z.int().check(z.minimum(0), z.maximum(INPUT_MAX_BYTES)),
        sha256: z.string().check(z.regex(/^[0-9a-f]{64}$/)),
      }),
    )
    .check(z.maxLength(INPUTS_MAX_FILES)),
  /** The flow's prompt folder was shipped (under prompt/). */
  prompt: z.optional(z.boolean()),
  /** The extraction's input, as shipped: `input/<name>` (a folder or a file). */
  extractInput: z.optional(
    z.string().check(
      z.regex(/^input\/[^/\0\\]{1,255}$/),
      z.refine((s) => !/^input\/\.\.?$/.test(s)),
    ),
  ),
});
export type RunInputs = z.infer<typeof RunInputs>;

export function inputsKey(runId: string): string {
  return `runboard:run:${runId}:inputs`;
}

/** Where a run's inputs are on the board's machine (its launch). */
export interface InputSources {
  runner: string;
  cardPath: string;
  cardText: string;
  project: string | undefined;
  prompt: string | undefined;
  extractInput: string | undefined;
}

/** A launch whose inputs cannot be shipped (too big, a link, a name no host would take): said in words. */
export class InputsRefused extends Error {}

/** The recording a reflect card names (`recording: rec-…` in its front matter), if an id. */
export function cardRecording(text: string): string | undefined {
  const front = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text)?.[1] ?? '';
  const m = /^recording:[ \t]*["']?([^"'\s#]+)["']?[ \t]*(?:#.*)?$/m.exec(front);
  return m && RECORDING_ID.test(m[1]!) ? m[1] : undefined;
}

/** Reads the inputs of a launch (none: undefined), bounded, regular files only, never through a link. */
export async function collectInputs(
  src: InputSources,
): Promise<{ inputs: RunInputs; bytes: Map<string, Buffer> } | undefined> {
  const bytes = new Map<string, Buffer>();
  const files: RunInputs['files'] = [];
  let total = 0;
  const add = async (file: string, name: string): Promise<void> => {
    const bad = badInputName(name);
    if (bad)
      throw new InputsRefused(
        `${file} cannot be sent to a host of the fleet: its name has ${bad}; rename it or run the card locally`,
      );
    // Opened without following a link, then checked to be a regular file (not a FIFO, not a device).
    const fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
      (err: NodeJS.ErrnoException) => {
        throw new InputsRefused(
          err.code === 'ELOOP'
            ? `${file} is a link: a run's inputs are sent to a host of the fleet only as regular files`
            : `cannot read ${file} to send it to a host of the fleet: ${err.message}`,
        );
      },
    );
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new InputsRefused(`${file} is not a regular file: it cannot be sent to a host`);
      if (st.size > INPUT_MAX_BYTES)
        throw new InputsRefused(
          `${file} is ${st.size} bytes, over the fleet's cap of ${INPUT_MAX_BYTES} bytes for one input (RUNBOARD_FLEET_ARTIFACT_MAX_BYTES): run the card locally or raise the cap on the board and its hosts`,
        );
      total += st.size;
      if (total > RUN_INPUTS_MAX_BYTES || files.length >= INPUTS_MAX_FILES)
        throw new InputsRefused(
          `the run's inputs are over the fleet's cap of ${RUN_INPUTS_MAX_BYTES} bytes or ${INPUTS_MAX_FILES} files together: run the card locally`,
        );
      const data = await fh.readFile();
      if (data.length !== st.size)
        throw new InputsRefused(`${file} changed while it was read: launch it again`);
      files.push({ name, size: data.length, sha256: createHash('sha256').update(data).digest('hex') });
      bytes.set(name, data);
    } finally {
      await fh.close();
    }
  };
  /** Every regular file of `dir` (links and other kinds refused; `skip`: names left out). */
  const addTree = async (dir: string, prefix: string, depth = 0, skip?: RegExp): Promise<void> => {
    for (const e of (await readdir(dir, { withFileTypes: true })).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      if (skip?.test(e.name)) continue;
      const full = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (depth >= MAX_DEPTH - 2)
          throw new InputsRefused(`${full} is too deep to be sent to a host of the fleet`);
        await addTree(full, `${prefix}${e.name}/`, depth + 1);
      } else await add(full, `${prefix}${e.name}`);
    }
  };
  const isDir = async (p: string): Promise<boolean> =>
    (await lstat(p).catch(() => undefined))?.isDirectory() ?? false;

  const cardDir = src.cardPath.replace(/\.md$/i, '');
  if (cardDir !== src.cardPath && (await isDir(cardDir))) await addTree(cardDir, 'project/cards/card/');
  const project = src.project ?? path.dirname(path.dirname(src.cardPath));
  const rec = src.runner === 'reflect' ? cardRecording(src.cardText) : undefined;
  if (rec) {
    const dir = path.join(project, 'recordings', rec);
    // reflect reads the manifest and the screenshots, not the video
    if (await isDir(dir)) await addTree(dir, `project/recordings/${rec}/`, 0, /^video\./);
  }
  let prompt = false;
  if (src.prompt && (await isDir(src.prompt))) {
    await addTree(src.prompt, 'prompt/');
    prompt = true;
  }
  let extractInput: string | undefined;
  if (src.extractInput) {
    extractInput = `input/${path.basename(src.extractInput)}`;
    if (await isDir(src.extractInput)) await addTree(src.extractInput, `${extractInput}/`);
    else await add(src.extractInput, extractInput);
  }
  if (files.length === 0 && !prompt && !extractInput) return undefined;
  return {
    inputs: { files, ...(prompt ? { prompt } : {}), ...(extractInput ? { extractInput } : {}) },
    bytes,
  };
}

/** Puts the bytes in Redis beside the job (kept a week at most; dropped when the run's record is final). */
export async function storeInputs(redis: Redis, runId: string, bytes: Map<string, Buffer>): Promise<void> {
  const key = inputsKey(runId);
  const m = redis.multi().del(key);
  for (const [name, data] of bytes) m.hset(key, name, data);
  m.pexpire(key, 7 * 24 * 3600_000);
  const res = await m.exec();
  const failed = res?.find(([err]) => err);
  if (failed) throw failed[0]!;
}

/**
 * The host's side: writes the job's inputs as new files under `dir` (made here, empty), each checked
 * against its size and digest; then the card's text as `project/cards/card.md`.
 */
export async function receiveInputs(
  redis: Redis,
  runId: string,
  inputs: RunInputs,
  cardText: string,
  dir: string,
): Promise<void> {
  await mkdir(dir, { mode: 0o700 }); // fails if it is there: nothing of another job is written over
  let total = 0;
  for (const f of inputs.files) {
    total += f.size;
    if (total > RUN_INPUTS_MAX_BYTES)
      throw new Error(`its inputs are over ${RUN_INPUTS_MAX_BYTES} bytes together`);
    const data = await redis.hgetBuffer(inputsKey(runId), f.name);
    if (!data) throw new Error(`its input ${f.name} is not in Redis (expired, or removed)`);
    if (data.length !== f.size || createHash('sha256').update(data).digest('hex') !== f.sha256)
      throw new Error(`its input ${f.name} in Redis is not the file the job names (size or digest differ)`);
    const file = path.join(dir, ...f.name.split('/'));
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    await writeFile(file, data, { flag: 'wx', mode: 0o600 }); // a new file: never through a link
  }
  await mkdir(path.join(dir, 'project', 'cards'), { recursive: true, mode: 0o700 });
  await writeFile(path.join(dir, 'project', 'cards', 'card.md'), cardText, { flag: 'wx', mode: 0o600 });
}
