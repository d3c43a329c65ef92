/**
 * Runboard's recording format (seed 002's Record), what every process reads and native's recorder
 * writes: a recording lives in `<dir>/<id>/` (a project's `recordings/`) as manifest.jsonl (one
 * `ManifestStep` a line, in order), screenshots/ (start.png, then one per step) and recording.json
 * (what, when, how it ended). Listing and deleting recordings is here too, so a process that only shows
 * them (the board) needs no native addon. The recorder itself (input events, frames, masking, video)
 * stays in native/src/desktop/recording.ts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { readRegularFileText } from '@runboard/native/regular-file';

/** [x, y, width, height], px, in screen coordinates (the same tuple as native's `Rect`). */
export type Bounds = [number, number, number, number];

export type StopReason = 'stopped' | 'duration-limit' | 'size-limit' | 'display-lost';

export type StepAction =
  | { type: 'type'; text: string }
  /** Typed into a password field: that a secret was typed, never what. */
  | { type: 'type'; secret: true }
  | { type: 'press'; key: string }
  /** `count` 2 or 3: a double or triple click (absent: a single click). */
  | { type: 'click'; x: number; y: number; button: ButtonName; count?: number }
  | { type: 'drag'; from: [number, number]; to: [number, number]; button: ButtonName }
  | { type: 'scroll'; x: number; y: number; dx: number; dy: number }
  /** Seed 002's Ctrl+I extract: what to read off the screen at this point of a replay. */
  | { type: 'extract'; query: string; candidates?: string[] };

export type ButtonName = 'left' | 'middle' | 'right';

/** A path step of an element: its role, name and position among its siblings of the same role. */
export interface ElementPathStep {
  role: string;
  name: string;
  index: number;
}

export interface ManifestElement {
  role: string;
  name: string;
  bounds: Bounds;
  /** From the window's root to the element: enough for a replay to find it again without a model. */
  path: ElementPathStep[];
  secret?: true;
}

export interface ManifestStep {
  step: number;
  /** Since the recording started, ms. */
  at: number;
  /** The pre-action screenshot, relative to the recording's folder. */
  screenshot: string;
  action: StepAction;
  window: { id: number; app: string; title: string; bounds: Bounds } | null;
  /** Pointer steps: the accessibility element under the pointer; extracts: the one they were taken from. */
  element?: ManifestElement;
  /**
   * Extracts without an `element`: why (no window had the keyboard focus, its accessibility tree could not
   * be read, or nothing lay under the pointer and no field had the focus).
   */
  elementMissing?: string;
  /** Key steps: the element that had the focus at the step's own time (the recorder's focus timeline). */
  focus?: ManifestElement;
  /**
   * Key steps: the recorder could not know which field had the focus (the app never reported where a
   * Tab moved it); `focus` is then absent, never a guess, and typed text is kept only as a secret when the
   * window has a password field.
   */
  focusUnknown?: true;
  /** A note the person attached with Ctrl+I → details, for this step. */
  details?: string;
  /** The input came from a synthetic device (a script driving XTest), not a person. */
  synthetic?: true;
}

/** A new recording id: rec-YYYYMMDD-HHMMSS-xxxxxx (UTC, then 3 random bytes). */
export function newRecordingId(): string {
  const t = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `rec-${t}-${randomBytes(3).toString('hex')}`;
}

/** A recording as a list shows it: what recording.json and the manifest say. */
export interface RecordingInfo {
  id: string;
  dir: string;
  startedAt: string;
  /** Absent while it is still being recorded (or when its process died before the end). */
  endedAt?: string;
  durationMs?: number;
  stopReason?: StopReason;
  message?: string;
  /** Steps in the manifest (events, grouped). */
  steps: number;
  /** Bytes of every file in its folder. */
  bytes: number;
  /** Screenshots for a thumbnail strip: the start, then evenly spaced steps (paths relative to `dir`). */
  thumbnails: string[];
}

export const RECORDING_ID = /^rec-\d{8}-\d{6}-[0-9a-f]{6}$/;

/** Bytes of every regular file in a recording's folder (links and anything else not counted or followed). */
async function folderBytes(dir: string): Promise<number> {
  let n = 0;
  for (const f of await readdir(dir, { withFileTypes: true, recursive: true }))
    if (f.isFile())
      n += await lstat(path.join(f.parentPath, f.name)).then(
        (st) => (st.isFile() ? st.size : 0),
        () => 0,
      );
  return n;
}

/**
 * What is read of a recording's folder: a run may have written there (a project folder inside a run's
 * workspace), so only regular files, never through a link, bounded, off the caller's thread (a FIFO
 * named recording.json hung the board; a link to /dev/zero grew it without bound).
 */
const META_READ = { noFollow: true, maxBytes: 1 << 20 } as const;
const MANIFEST_READ = { noFollow: true, maxBytes: 32 << 20 } as const;

/** The recordings in a folder (a project's `recordings/`), newest first; unreadable entries are left out. */
export async function listRecordings(dir: string, thumbnails = 6): Promise<RecordingInfo[]> {
  let ids: string[];
  try {
    ids = await readdir(dir);
  } catch {
    return [];
  }
  const out: RecordingInfo[] = [];
  for (const id of ids) {
    if (!RECORDING_ID.test(id)) continue;
    const here = path.join(dir, id);
    try {
      const meta = JSON.parse(
        await readRegularFileText(path.join(here, 'recording.json'), { ...META_READ, within: dir }),
      ) as Record<string, unknown>;
      const steps = (
        await readRegularFileText(path.join(here, 'manifest.jsonl'), { ...MANIFEST_READ, within: dir })
      )
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => (JSON.parse(l) as ManifestStep).screenshot);
      const pick = Math.max(0, thumbnails - 1);
      const spaced =
        steps.length <= pick
          ? steps
          : Array.from({ length: pick }, (_, i) => steps[Math.floor((i * steps.length) / pick)]!);
      const shown: string[] = [];
      // Only images already written (a recording in progress lists its start before it is on disk),
      // and only regular files.
      for (const t of [String(meta.startScreenshot), ...spaced]) {
        if (shown.length >= thumbnails) break;
        if (
          await lstat(path.join(here, t)).then(
            (st) => st.isFile(),
            () => false,
          )
        )
          shown.push(t);
      }
      out.push({
        id,
        dir: here,
        startedAt: String(meta.startedAt),
        ...(typeof meta.endedAt === 'string' ? { endedAt: meta.endedAt } : {}),
        ...(typeof meta.durationMs === 'number' ? { durationMs: meta.durationMs } : {}),
        ...(typeof meta.stopReason === 'string' ? { stopReason: meta.stopReason as StopReason } : {}),
        ...(typeof meta.message === 'string' ? { message: meta.message } : {}),
        steps: steps.length,
        bytes: await folderBytes(here),
        thumbnails: shown,
      });
    } catch {
      // not a recording (or a broken one, or not regular files): not listed
    }
  }
  return out.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
}

/** Deletes one recording's folder; refuses anything that is not a recording id in `dir`. */
export function deleteRecording(dir: string, id: string): void {
  if (!RECORDING_ID.test(id))
    throw new TypeError(
      `"${id}" is not a recording id (rec-YYYYMMDD-HHMMSS-xxxxxx, as listRecordings gives them)`,
    );
  const here = path.join(dir, id);
  if (!existsSync(path.join(here, 'recording.json'))) throw new Error(`no recording ${id} in ${dir}`);
  rmSync(here, { recursive: true, force: true });
}
