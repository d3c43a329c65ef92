// The screen video of a recording (seed 000): ffmpeg's x11grab of the test display into an H.264 mp4,
// with the microphone from a real PulseAudio started here (a null sink whose monitor hears a phrase
// spoken by espeak-ng), and without it, saying so, when the microphone cannot be opened.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { desktop, listMicrophones, Recording, type RecordingSummary } from '../../native/src/index.ts';
import { DesktopSession, eventually, findElement, repo, sleep, videoFrame } from './session.ts';

const SINK = 'runboard_test_sink';
let s: DesktopSession;
let out: string;
let pulseDir: string;
let pulse: ChildProcess;
let phrase: string;
let screen: { width: number; height: number };
const savedPulseServer = process.env.PULSE_SERVER;

interface Probe {
  streams: { codec_type: string; codec_name: string; width?: number; height?: number }[];
  format: { duration: string };
}

function ffprobe(file: string): Probe {
  const r = spawnSync('ffprobe', ['-v', 'error', '-show_streams', '-show_format', '-of', 'json', file], {
    encoding: 'utf8',
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Probe;
}

const frame = videoFrame;

/** The loudest sample of the file's audio, in dB (silence is about -91). */
function maxVolume(file: string): number {
  const r = spawnSync('ffmpeg', ['-v', 'info', '-i', file, '-vn', '-af', 'volumedetect', '-f', 'null', '-'], {
    encoding: 'utf8',
  });
  const m = /max_volume: (-?[\d.]+) dB/.exec(r.stderr);
  if (!m) throw new Error(`no volume in: ${r.stderr.slice(-500)}`);
  return Number(m[1]);
}

async function record(
  video: { mic?: string },
  during: () => Promise<void>,
): Promise<{ summary: RecordingSummary; file: string }> {
  const rec = await Recording.start({ dir: out, display: s.env.DISPLAY!, video });
  await during();
  const summary = await rec.stop();
  return { summary, file: path.join(rec.dir, 'video.mp4') };
}

beforeAll(async () => {
  s = await DesktopSession.start();
  out = mkdtempSync(path.join(os.tmpdir(), 'runboard-video-'));
  // A private PulseAudio: its own runtime dir and socket, no default.pa, a null sink to play into.
  pulseDir = path.join(out, 'pulse');
  mkdirSync(pulseDir);
  const socket = path.join(pulseDir, 'native');
  pulse = spawn(
    'pulseaudio',
    [
      '-n',
      '--daemonize=no',
      '--exit-idle-time=-1',
      '--disable-shm=yes',
      '--use-pid-file=no',
      '-L',
      `module-native-protocol-unix auth-anonymous=1 socket=${socket}`,
      '-L',
      `module-null-sink sink_name=${SINK}`,
    ],
    {
      env: {
        PATH: process.env.PATH,
        HOME: pulseDir,
        PULSE_RUNTIME_PATH: pulseDir,
        XDG_CONFIG_HOME: pulseDir,
      },
      stdio: 'ignore',
    },
  );
  process.env.PULSE_SERVER = `unix:${socket}`;
  const up = await eventually(
    async () => listMicrophones().sources.some((m) => m.name === `${SINK}.monitor`),
    10_000,
  );
  expect(up, 'the test PulseAudio came up with its null sink').toBe(true);
  phrase = path.join(out, 'phrase.wav');
  const spoken = spawnSync('espeak-ng', ['-w', phrase, 'Open the form and type the name of the customer'], {
    encoding: 'utf8',
  });
  expect(spoken.status, spoken.stderr).toBe(0);
  const { source } = await desktop.capture({});
  screen = { width: source[2], height: source[3] };
}, 60_000);

afterAll(async () => {
  if (pulse && pulse.exitCode === null) {
    const gone = new Promise((res) => pulse.once('exit', res));
    pulse.kill('SIGTERM');
    await gone;
  }
  if (savedPulseServer === undefined) delete process.env.PULSE_SERVER;
  else process.env.PULSE_SERVER = savedPulseServer;
  if (!process.env.KEEP_RECORDINGS) rmSync(out, { recursive: true, force: true });
  await s?.stop();
  expect(s.leftovers(), 'processes the suite started and left running').toEqual([]);
  const ffmpegs = spawnSync('pgrep', ['-f', `ffmpeg.*${out}`], { encoding: 'utf8' }).stdout.trim();
  expect(ffmpegs, 'ffmpeg processes left running').toBe('');
});

describe('screen video', () => {
  // First, while the desktop is empty: a window opened during the pause appears at once after it.
  it('records nothing while paused: the parts before and after a pause are joined into one video', async () => {
    const t0 = Date.now();
    const rec = await Recording.start({ dir: out, display: s.env.DISPLAY!, video: { mic: 'none' } });
    await sleep(1000);
    rec.pause();
    const p0 = Date.now();
    await s.startForm('Runboard Paused Form');
    await sleep(2500);
    const pausedMs = Date.now() - p0;
    rec.resume();
    await sleep(1000);
    const summary = await rec.stop();
    const wallMs = Date.now() - t0;
    expect(summary.warnings).toEqual([]);
    expect(summary.video).toMatchObject({ complete: true });
    expect(readdirSync(rec.dir).filter((f) => f.includes('.mp4') || f.includes('parts'))).toEqual([
      'video.mp4',
    ]);
    const file = path.join(rec.dir, 'video.mp4');
    // The pause is left out, not a still frame: the video is shorter than the time not paused.
    expect(Number(ffprobe(file).format.duration) * 1000).toBeLessThan(wallMs - pausedMs);
    // Before the pause an empty desktop, after it the window: both parts are in the file.
    const first = frame(file, 0);
    const last = frame(file, -0.2);
    let differ = 0;
    for (let i = 0; i < first.length; i += 3) if (Math.abs(first[i]! - last[i]!) > 40) differ++;
    expect(differ / (first.length / 3)).toBeGreaterThan(0.05);
  }, 60_000);

  it('records the display as H.264 with the microphone, while the screen changes', async () => {
    const { summary, file } = await record({ mic: `${SINK}.monitor` }, async () => {
      await sleep(700);
      await s.startForm('Runboard Video Form', {}, ['--x', '640', '--y', '100']); // beside the paused test's form
      const played = spawnSync('paplay', [`--device=${SINK}`, phrase], { encoding: 'utf8' });
      expect(played.status, played.stderr).toBe(0);
      await sleep(500);
    });
    expect(summary.warnings).toEqual([]);
    expect(summary.video).toMatchObject({ audio: `${SINK}.monitor`, complete: true });
    expect(summary.bytes).toBeGreaterThanOrEqual(summary.video!.bytes);
    const probe = ffprobe(file);
    expect(Number(probe.format.duration)).toBeGreaterThan(0);
    const v = probe.streams.find((x) => x.codec_type === 'video');
    expect(v).toMatchObject({ codec_name: 'h264', width: screen.width, height: screen.height });
    const a = probe.streams.find((x) => x.codec_type === 'audio');
    expect(a?.codec_name).toBe('aac');
    // The phrase is in it: a null sink's monitor is pure silence (-91 dB) unless something played.
    expect(maxVolume(file)).toBeGreaterThan(-40);
    // The window that opened during the recording is in its last frame and not in its first.
    const first = frame(file, 0);
    const last = frame(file, -0.2);
    expect(first.length).toBe(screen.width * screen.height * 3);
    let differ = 0;
    for (let i = 0; i < first.length; i += 3) if (Math.abs(first[i]! - last[i]!) > 40) differ++;
    expect(differ / (first.length / 3)).toBeGreaterThan(0.05);
    const meta = JSON.parse(readFileSync(path.join(summary.dir, 'recording.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(meta).toMatchObject({ video: 'video.mp4', audio: `${SINK}.monitor`, warnings: [] });
  }, 60_000);

  it('records without audio, and says so, when the microphone cannot be opened', async () => {
    const { summary, file } = await record({ mic: 'runboard-no-such-microphone' }, () => sleep(1200));
    expect(summary.video).toMatchObject({ audio: null, complete: true });
    expect(summary.warnings).toHaveLength(1);
    expect(summary.warnings[0]).toMatch(
      /the microphone "runboard-no-such-microphone" could not be opened .*without audio/,
    );
    const probe = ffprobe(file);
    expect(probe.streams.map((x) => x.codec_type)).toEqual(['video']);
    expect(Number(probe.format.duration)).toBeGreaterThan(0);
    const meta = JSON.parse(readFileSync(path.join(summary.dir, 'recording.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(meta).toMatchObject({ audio: null, warnings: summary.warnings });
  }, 60_000);

  it('stops the video cleanly at the duration limit', async () => {
    const rec = await Recording.start({
      dir: out,
      display: s.env.DISPLAY!,
      video: { mic: 'none' },
      maxDurationMs: 1500,
    });
    const summary = await rec.done;
    expect(summary.stopReason).toBe('duration-limit');
    expect(summary.video).toMatchObject({ audio: null, complete: true });
    expect(summary.warnings).toEqual([]);
    const probe = ffprobe(path.join(rec.dir, 'video.mp4'));
    expect(probe.streams.map((x) => x.codec_type)).toEqual(['video']);
  }, 60_000);

  it('covers the password fields it has seen in the video, for its whole length', async () => {
    const title = 'Runboard Video Secret Form';
    await s.startForm(title, {}, ['--x', '300', '--y', '60']);
    const field = await findElement(title, 'password text', 'Password');
    const rec = await Recording.start({ dir: out, display: s.env.DISPLAY!, video: { mic: 'none' } });
    await sleep(500);
    await desktop.click(field.bounds[0] + 20, field.bounds[1] + Math.floor(field.bounds[3] / 2));
    await rec.idle();
    await desktop.type('s3cret-in-video');
    await rec.idle();
    await sleep(800);
    const summary = await rec.stop();
    expect(summary.warnings).toEqual([]);
    expect(summary.video).toMatchObject({ complete: true });
    expect(summary.video!.masked).toBeGreaterThanOrEqual(1);
    // Grey over the field, in the first frame (before it was read) and in the last (typed into).
    const file = path.join(rec.dir, 'video.mp4');
    for (const at of [0, -0.2]) {
      const f = frame(file, at);
      const [x, y, w, h] = field.bounds;
      let grey = 0;
      let n = 0;
      for (let yy = y + 4; yy < y + h - 4; yy++)
        for (let xx = x + 4; xx < x + w - 4; xx++, n++) {
          const i = (yy * screen.width + xx) * 3;
          if ([0, 1, 2].every((c) => Math.abs(f[i + c]! - 0x80) <= 12)) grey++;
        }
      expect(grey / n, `the password field is grey in the video at ${at} s`).toBeGreaterThan(0.97);
    }
  }, 60_000);

  it('`runboard record` lists the microphones, records with --mic and warns when it cannot open one', async () => {
    const built = spawnSync(process.execPath, [path.join(repo, 'scripts', 'bundle.mjs'), 'runboard'], {
      cwd: repo,
      encoding: 'utf8',
    });
    expect(built.status, built.stderr).toBe(0);
    const cli = path.join(repo, 'dist', 'runboard.mjs');
    const env = { ...s.env, PULSE_SERVER: process.env.PULSE_SERVER };
    const list = spawnSync(process.execPath, [cli, 'record', '--list-mics'], { env, encoding: 'utf8' });
    expect(list.status, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^default\t/m);
    expect(list.stdout).toMatch(/^none\t/m);
    expect(list.stdout).toContain(`${SINK}.monitor\t`);

    const cliOut = path.join(out, 'cli');
    const child = spawn(
      process.execPath,
      [cli, 'record', '--display', s.env.DISPLAY!, '--out', cliOut, '--mic', 'runboard-missing-mic'],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    expect(await eventually(async () => stderr.includes('; Ctrl+C'), 20_000), stderr).toBe(true);
    await sleep(1000);
    const exited = new Promise<number | null>((res) => child.once('exit', res));
    child.kill('SIGINT');
    expect(await exited, stderr).toBe(0);
    expect(stderr).toMatch(/warning: the microphone "runboard-missing-mic" could not be opened/);
    const id = /recording (rec-\S+) into/.exec(stderr)![1]!;
    const file = path.join(cliOut, id, 'video.mp4');
    expect(existsSync(file)).toBe(true);
    expect(ffprobe(file).streams.map((x) => x.codec_type)).toEqual(['video']);
    // An empty --mic is refused with what to do.
    const bad = spawnSync(process.execPath, [cli, 'record', '--display', s.env.DISPLAY!, '--mic', ''], {
      env,
      encoding: 'utf8',
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--mic takes a source name/);
  }, 90_000);
});
