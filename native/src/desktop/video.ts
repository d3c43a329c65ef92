// The screen video of a recording (seed 000): ffmpeg grabs the recorded area of the X display
// (x11grab) into an H.264 .mp4, with the microphone (PulseAudio, or PipeWire's pulse server) when
// one is chosen and can be opened. A microphone that cannot be opened never fails the recording: the
// video is made without audio and a warning says why. Stopped with 'q' on ffmpeg's stdin, so that it
// finishes the file (the moov atom at the end: an mp4 cut off without it does not play).
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Rect } from './types.ts';

/** 'default': the system's default source; 'none': no microphone; else a PulseAudio source name. */
export type MicChoice = 'default' | 'none' | (string & {});

export interface MicSource {
  /** The PulseAudio source name, what `mic` takes. */
  name: string;
  /** A sink's monitor (what is played), not an input device. */
  monitor: boolean;
  state: string;
}

export interface ScreenVideoOptions {
  file: string;
  /** The X display, e.g. ':1'. */
  display: string;
  /** The screen rectangle recorded. */
  region: Rect;
  /** Default 'default'. */
  mic?: MicChoice;
  /** Default 15. */
  framerate?: number;
  /**
   * The recording border's width (px) just inside the region: x11grab reads the screen as shown, border
   * included, so the video's outer strips of this width repeat their inner neighbours' pixels instead.
   */
  border?: number;
  /** The ffmpeg executable; default `ffmpeg` on PATH. */
  ffmpeg?: string;
  /** Called when ffmpeg ends without being asked to (the display went away, the disk is full). */
  onExit?: (message: string) => void;
}

export interface VideoResult {
  file: string;
  bytes: number;
  width: number;
  height: number;
  /** The microphone source recorded, or null when the video has no audio. */
  audio: string | null;
  warnings: string[];
  /** ffmpeg ended cleanly (the file is complete). */
  complete: boolean;
  /** Set when the file is not complete: ffmpeg's last words. */
  error?: string;
  /** Password fields covered in it (grey, for its whole length). */
  masked?: number;
}

export class VideoError extends Error {}

type Microphones = { sources: MicSource[]; error?: string };

/** The PulseAudio/PipeWire sources (`pactl list short sources`); `error` says why there are none. */
export function listMicrophones(): Microphones {
  const r = spawnSync('pactl', ['list', 'short', 'sources'], { encoding: 'utf8', timeout: 5000 });
  return microphonesOf(r.error, r.status, r.stdout, r.stderr);
}

/** listMicrophones without blocking (for a long-lived process: the board). */
export function listMicrophonesAsync(): Promise<Microphones> {
  return new Promise((resolve) => {
    execFile(
      'pactl',
      ['list', 'short', 'sources'],
      { encoding: 'utf8', timeout: 5000 },
      (err, stdout, stderr) => {
        const spawnError = err && typeof err.code === 'string' ? err : undefined; // e.g. ENOENT
        resolve(
          microphonesOf(spawnError, err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr),
        );
      },
    );
  });
}

function microphonesOf(
  error: Error | undefined,
  status: number | null,
  stdout: string,
  stderr: string,
): Microphones {
  if (error)
    return {
      sources: [],
      error: `pactl could not be run (${error.message}): install pulseaudio-utils`,
    };
  if (status !== 0)
    return {
      sources: [],
      error: `no sound server: ${(stderr || stdout).trim() || `pactl exited with ${status}`}`,
    };
  const sources = stdout
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => l.split('\t'))
    .filter((f) => f.length >= 2)
    .map((f) => ({ name: f[1]!, monitor: f[1]!.endsWith('.monitor'), state: f[4]?.trim() ?? '' }));
  return { sources };
}

const START_TIMEOUT_MS = 10_000;

/** yuv420p (what every player decodes) needs even sizes: an odd edge loses its last pixel. */
const even = (n: number): number => n - (n % 2);

function ffmpegArgs(o: ScreenVideoOptions, mic: string | null): string[] {
  const [x, y, w, h] = o.region;
  const rate = String(o.framerate ?? 15);
  const video = [
    '-f',
    'x11grab',
    '-framerate',
    rate,
    '-video_size',
    `${w}x${h}`,
    '-thread_queue_size',
    '64',
    '-i',
    `${o.display}+${x},${y}`,
  ];
  const audio = mic ? ['-f', 'pulse', '-thread_queue_size', '1024', '-i', mic] : [];
  return [
    '-hide_banner', '-nostats', '-loglevel', 'info', '-y',
    ...video,
    ...audio,
    '-map', '0:v', ...(mic ? ['-map', '1:a', '-c:a', 'aac', '-b:a', '96k'] : []),
    // ultrafast: the machine also runs the apps being recorded; a screen compresses well anyway.
    '-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '30', '-pix_fmt', 'yuv420p',
    ...filters(o),
    o.file,
  ]; // prettier-ignore
}

function filters(o: ScreenVideoOptions): string[] {
  const [, , w, h] = o.region;
  const b = o.border ?? 0;
  const vf = [
    ...(b > 0 ? [`fillborders=left=${b}:right=${b}:top=${b}:bottom=${b}:mode=smear`] : []),
    ...(w % 2 || h % 2 ? [`crop=${even(w)}:${even(h)}:0:0`] : []),
  ];
  return vf.length ? ['-vf', vf.join(',')] : [];
}

/** Starts ffmpeg; resolves once it has opened its inputs and the output, or rejects with its words. */
type Launched = { child: ChildProcess; log: () => string };

function launch(o: ScreenVideoOptions, mic: string | null): Promise<Launched> {
  return new Promise((resolve, reject) => {
    const child = spawn(o.ffmpeg ?? 'ffmpeg', ffmpegArgs(o, mic), { stdio: ['pipe', 'ignore', 'pipe'] });
    let log = '';
    let settled = false;
    const tail = (): string =>
      log
        .trim()
        .split('\n')
        .filter((l) => !/^\s/.test(l))
        .slice(-1)
        .join('');
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => {
      log = (log + d).slice(-8000);
      // Printed once every input is open and the output's header is written.
      if (!settled && /^Output #0/m.test(log)) {
        settled = true;
        clearTimeout(timer);
        resolve({ child, log: tail });
      }
    });
    // A sound server that accepts the connection and never answers must not hold the recording up.
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      child.kill('SIGKILL');
      reject(
        new VideoError(
          `ffmpeg did not start recording in ${START_TIMEOUT_MS / 1000} s: ${tail() || 'no output'}`,
        ),
      );
    }, START_TIMEOUT_MS);
    child.once('exit', () => clearTimeout(timer));
    child.stdin.on('error', () => {}); // ffmpeg gone: its exit says why
    child.on('error', (err) => {
      clearTimeout(timer);
      if (settled) return;
      settled = true;
      reject(new VideoError(`ffmpeg could not be started (${err.message}): install ffmpeg`));
    });
    child.on('exit', (code) => {
      if (settled) return;
      settled = true;
      reject(new VideoError(tail() || `ffmpeg exited with ${code}`));
    });
  });
}

interface Segment {
  file: string;
  child: ChildProcess;
  log: () => string;
  exited: Promise<number | null>;
  asked: boolean;
  finished?: Promise<{ complete: boolean; error?: string }>;
}

/** The file of the n-th part (after n pauses): video.mp4, video.1.mp4, … */
const partFile = (file: string, n: number): string =>
  n === 0 ? file : file.replace(/(\.mp4)?$/, `.${n}.mp4`);

export class ScreenVideo {
  private readonly segments: Segment[] = [];
  private paused = false;
  private ended = false; // a resume failed: no more parts
  private queue: Promise<void> = Promise.resolve();
  private stopping: Promise<VideoResult> | undefined;

  private constructor(
    private readonly options: ScreenVideoOptions,
    first: Launched,
    /** The microphone source recorded, or null. */
    readonly audio: string | null,
    readonly warnings: string[],
  ) {
    this.add(options.file, first);
  }

  /**
   * Starts the video. A microphone that cannot be opened gives a video without audio and a warning;
   * throws VideoError only when there can be no video at all (no ffmpeg, the display cannot be grabbed).
   */
  static async start(options: ScreenVideoOptions): Promise<ScreenVideo> {
    const choice = options.mic ?? 'default';
    const warnings: string[] = [];
    if (choice !== 'none') {
      try {
        return new ScreenVideo(options, await launch(options, choice), choice, warnings);
      } catch (err) {
        const what = choice === 'default' ? 'the default microphone' : `the microphone "${choice}"`;
        warnings.push(`${what} could not be opened (${(err as Error).message}); recording without audio`);
      }
    }
    return new ScreenVideo(options, await launch(options, null), null, warnings);
  }

  private add(file: string, l: Launched): void {
    const { child } = l;
    const seg: Segment = {
      file,
      ...l,
      asked: false,
      exited: new Promise((res) =>
        child.exitCode !== null ? res(child.exitCode) : child.once('exit', (code) => res(code)),
      ),
    };
    void seg.exited.then(() => {
      if (!seg.asked) this.options.onExit?.(`the screen video stopped: ${seg.log() || 'ffmpeg ended'}`);
    });
    this.segments.push(seg);
  }

  /** Asks ffmpeg to finish its file ('q'), then SIGINT, then SIGKILL; resolves once it has exited. */
  private finish(seg: Segment): Promise<{ complete: boolean; error?: string }> {
    seg.finished ??= (async () => {
      seg.asked = seg.child.exitCode === null;
      if (seg.asked) seg.child.stdin!.end('q');
      const timers = [
        setTimeout(() => seg.child.kill('SIGINT'), 5000),
        setTimeout(() => seg.child.kill('SIGKILL'), 15000),
      ];
      const code = await seg.exited;
      timers.forEach(clearTimeout);
      // 255: ended by the signal we sent; the file is finished.
      if (code === 0 || (code === 255 && seg.asked)) return { complete: true };
      return { complete: false, error: seg.log() || `ffmpeg exited with ${code}` };
    })();
    return seg.finished;
  }

  /** Nothing is recorded while paused: the current part is finished; resume() starts the next one. */
  pause(): void {
    if (this.paused || this.stopping) return;
    this.paused = true;
    const seg = this.segments.at(-1)!;
    this.queue = this.queue.then(() => this.finish(seg)).then(() => undefined);
  }

  resume(): void {
    if (!this.paused || this.stopping) return;
    this.paused = false;
    this.queue = this.queue.then(async () => {
      if (this.ended) return;
      const file = partFile(this.options.file, this.segments.length);
      try {
        this.add(file, await launch({ ...this.options, file }, this.audio));
      } catch (err) {
        this.ended = true;
        this.warnings.push(
          `the screen video could not be resumed (${(err as Error).message}); it ends at the pause`,
        );
      }
    });
  }

  /** ffmpeg's process id (benchmarks read its CPU time). */
  get pid(): number | undefined {
    return this.segments.at(-1)?.child.pid;
  }

  /** Bytes written so far. */
  get bytes(): number {
    let n = 0;
    for (const s of this.segments) {
      try {
        n += statSync(s.file).size;
      } catch {
        // not written yet, or joined already
      }
    }
    return n;
  }

  /** Finishes the video (the parts after pauses joined into one file); resolves once ffmpeg has exited. */
  stop(): Promise<VideoResult> {
    this.stopping ??= (async () => {
      await this.queue;
      const results = await Promise.all(this.segments.map((s) => this.finish(s)));
      let error = results.find((r) => !r.complete)?.error;
      if (!error && this.segments.length > 1)
        error = await join(
          this.options.file,
          this.segments.map((s) => s.file),
        );
      const [, , w, h] = this.options.region;
      return {
        file: this.options.file,
        bytes: (() => {
          try {
            return statSync(this.options.file).size;
          } catch {
            return 0;
          }
        })(),
        width: even(w),
        height: even(h),
        audio: this.audio,
        warnings: this.warnings,
        complete: !error,
        ...(error ? { error } : {}),
      };
    })();
    return this.stopping;
  }
}

/** Joins the parts into `file` (ffmpeg's concat demuxer, no re-encoding); an error in words, or undefined. */
async function join(file: string, parts: string[]): Promise<string | undefined> {
  const list = `${file}.parts.txt`;
  const joined = `${file}.joined.mp4`;
  writeFileSync(list, parts.map((p) => `file '${p.replace(/'/g, "'\\''")}'\n`).join(''));
  const child = spawn(
    'ffmpeg',
    ['-v', 'error', '-y', '-f', 'concat', '-safe', '0', '-i', list, '-c', 'copy', joined],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((res) => {
    child.once('error', () => res(null));
    child.once('exit', res);
  });
  rmSync(list, { force: true });
  if (code !== 0)
    return `the parts recorded between pauses could not be joined (${err.trim().split('\n').at(-1) ?? code}); they are ${parts.map((p) => path.basename(p)).join(', ')}`;
  renameSync(joined, file);
  for (const p of parts.slice(1)) rmSync(p, { force: true });
  return undefined;
}

/**
 * Covers rectangles (video pixels) of a finished video with grey for its whole length: the password
 * fields a recording has seen. ffmpeg re-encodes the picture (drawbox; the audio is copied) into a
 * new file that replaces the old one only once it is complete. An error in words, or undefined.
 */
export async function maskVideo(file: string, rects: Rect[], ffmpeg = 'ffmpeg'): Promise<string | undefined> {
  if (rects.length === 0) return undefined;
  const boxes = rects.map(
    ([x, y, w, h]) =>
      `drawbox=x=${Math.round(x)}:y=${Math.round(y)}:w=${Math.round(w)}:h=${Math.round(h)}:color=0x808080:t=fill`,
  );
  const masked = `${file}.masked.mp4`;
  const child = spawn(
    ffmpeg,
    ['-v', 'error', '-y', '-i', file, '-vf', boxes.join(','), '-map', '0', '-c:a', 'copy',
      '-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '30', '-pix_fmt', 'yuv420p', masked],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  ); // prettier-ignore
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
  const code = await new Promise<number | null>((res) => {
    child.once('error', (e) => ((err ||= e.message), res(null)));
    child.once('exit', res);
  });
  if (code !== 0) {
    rmSync(masked, { force: true });
    return err.trim().split('\n').at(-1) || `ffmpeg exited with ${code}`;
  }
  renameSync(masked, file);
  return undefined;
}
