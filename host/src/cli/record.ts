/**
 * `runboard record`: records a demonstration on an X display (the person's input events, a screenshot
 * before each) into `<out>/<id>/` (default: `recordings/` in the current directory): manifest.jsonl, screenshots/,
 * recording.json, video.mp4 (the screen with the microphone). Stops with Ctrl+C, SIGTERM or the stop
 * key (an X keysym name, default Pause), or at the limits (5 minutes, 2 GB). Ctrl+I pauses it and asks,
 * in a small prompt window (record-prompt.ts), for an extract or a note for the next step.
 *
 * `--control` (the board's recorder, host/src/core/recordings.ts): JSON lines both ways. Out: `recording`,
 * `context` (Ctrl+I: waiting for the answer), `paused`, `resumed`, `stopped`. In: `{"type":"stop"}`,
 * `pause`, `resume`, `{"type":"extract","query":…,"candidates":[…]}`, `{"type":"details","note":…}`
 * (both resume); the end of stdin stops the recording.
 */
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import type { Recording } from '@runboard/native';
import { askContext } from './record-prompt.ts';

export const RECORD_USAGE = `record [--display :N] [--monitor NAME] [--mic NAME|default|none] [--no-audio] [--no-video] [--out DIR] [--stop-key KEY] [--secret-field NAME]... [--json] [--control]
                                           record a demonstration until Ctrl+C or KEY (Pause); Ctrl+I adds an extract or details;
                                           --secret-field: a field (its label) whose typing is a secret though it shows it (a PIN)
  record --list-mics                       the microphones (PulseAudio/PipeWire sources) --mic takes`;

export class RecordUsageError extends Error {}

export async function cmdRecord(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      display: { type: 'string' },
      monitor: { type: 'string' },
      'no-audio': { type: 'boolean' },
      'no-video': { type: 'boolean' },
      mic: { type: 'string' },
      'list-mics': { type: 'boolean' },
      out: { type: 'string' },
      'stop-key': { type: 'string' },
      'secret-field': { type: 'string', multiple: true },
      json: { type: 'boolean' },
      control: { type: 'boolean' },
    },
  });
  if (values.control) values.json = true;
  if (values['list-mics']) return listMics(values.json === true);
  if (values.mic !== undefined && values['no-audio'])
    throw new RecordUsageError('--mic and --no-audio contradict each other: pass one of them');
  if (values.mic !== undefined && !values.mic.trim())
    throw new RecordUsageError(
      '--mic takes a source name (see `runboard record --list-mics`), default or none',
    );
  const secretFields = values['secret-field'] ?? [];
  if (secretFields.some((f) => !f.trim()))
    throw new RecordUsageError("--secret-field takes a field's label, e.g. --secret-field PIN");
  if (values.display !== undefined) {
    if (!/^:\d+(\.\d+)?$/.test(values.display))
      throw new RecordUsageError(`--display takes an X display like :1 (got "${values.display}")`);
    process.env.DISPLAY = values.display; // before the addon opens its first connection
  }
  if (!process.env.DISPLAY)
    throw new RecordUsageError('no X display to record: set DISPLAY or pass --display :N');
  // Loaded here, not at start-up: the other commands never load the addon.
  const { desktop, Recording } = await import('@runboard/native');
  let region: [number, number, number, number] | undefined;
  if (values.monitor !== undefined) {
    const monitors = await desktop.listMonitors();
    const m = monitors.find((x) => x.name === values.monitor);
    if (!m)
      throw new RecordUsageError(
        `no monitor "${values.monitor}" on ${process.env.DISPLAY} (there are: ${monitors.map((x) => x.name).join(', ') || 'none'})`,
      );
    region = m.bounds;
  }
  const out = path.resolve(values.out ?? 'recordings');
  const stopKey = values['stop-key'] ?? 'Pause';
  const say = (obj: Record<string, unknown>, text: string): void => {
    if (values.json) process.stdout.write(JSON.stringify(obj) + '\n');
    else process.stderr.write(text + '\n');
  };
  const onContextRequest = (): void => {
    say({ type: 'context' }, 'paused (Ctrl+I): add an extract or details in the window');
    if (values.control) return; // the board asks; its answer comes on stdin
    void askContext().then((a) => {
      if (a.kind === 'extract') rec.addExtract(a.query, a.candidates);
      else if (a.kind === 'details') rec.addDetails(a.note);
      if (a.warning) process.stderr.write(`warning: ${a.warning}\n`);
      rec.resume();
      say({ type: 'resumed' }, 'recording again');
    });
  };
  const rec = await Recording.start({
    onContextRequest,
    dir: out,
    stopKey,
    display: process.env.DISPLAY,
    ...(secretFields.length ? { secretFields } : {}),
    ...(region ? { region, monitor: values.monitor } : {}),
    ...(values['no-video']
      ? {}
      : { video: { mic: values['no-audio'] ? 'none' : (values.mic ?? 'default') } }),
  });
  // In --json the warnings are a field of the `recording` and `stopped` lines.
  const warn = (ws: string[]): void => {
    if (!values.json) for (const w of ws) process.stderr.write(`warning: ${w}\n`);
  };
  const printed = rec.warnings.length;
  warn(rec.warnings);
  say(
    { type: 'recording', id: rec.id, dir: rec.dir, audio: rec.audio ?? null, warnings: rec.warnings },
    `recording ${rec.id} into ${rec.dir}; Ctrl+C or the ${stopKey} key stops`,
  );
  const stop = (): void => void rec.stop();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  if (values.control) control(rec, (obj) => say(obj, ''));
  const summary = await rec.done;
  process.off('SIGINT', stop);
  process.off('SIGTERM', stop);
  warn(summary.warnings.slice(printed));
  say(
    { type: 'stopped', ...summary },
    `${summary.message === 'stopped' ? 'stopped' : summary.message}: ${summary.steps} steps, ${(summary.durationMs / 1000).toFixed(1)} s, ${summary.bytes} bytes in ${summary.dir}`,
  );
  return summary.stopReason === 'display-lost' ? 1 : 0;
}

type Controlled = Pick<Recording, 'stop' | 'pause' | 'resume' | 'addExtract' | 'addDetails' | 'isPaused'>;

/** `--control`: the board's requests on stdin, one JSON object a line; the end of stdin stops. */
function control(rec: Controlled, say: (obj: Record<string, unknown>) => void): void {
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    try {
      const m = JSON.parse(line) as { type?: string; query?: string; candidates?: string[]; note?: string };
      if (m.type === 'stop') void rec.stop();
      else if (m.type === 'pause') {
        rec.pause();
        say({ type: 'paused' });
      } else if (m.type === 'resume' || m.type === 'extract' || m.type === 'details') {
        if (m.type === 'extract') rec.addExtract(String(m.query ?? ''), (m.candidates ?? []).map(String));
        if (m.type === 'details') rec.addDetails(String(m.note ?? ''));
        rec.resume();
        say({ type: 'resumed' });
      } else say({ type: 'error', message: `unknown request ${JSON.stringify(m.type)}` });
    } catch (err) {
      say({ type: 'error', message: (err as Error).message });
    }
  });
  lines.once('close', () => void rec.stop());
}

/** `record --list-mics`: what `--mic` takes, from the sound server. */
async function listMics(json: boolean): Promise<number> {
  const { listMicrophones } = await import('@runboard/native');
  const { sources, error } = listMicrophones();
  if (json) {
    process.stdout.write(JSON.stringify({ sources, ...(error ? { error } : {}) }) + '\n');
    return error ? 1 : 0;
  }
  if (error) {
    process.stderr.write(`no microphones: ${error}\n`);
    return 1;
  }
  process.stdout.write('default\t(the system default microphone)\nnone\t(no microphone)\n');
  for (const m of sources)
    process.stdout.write(
      `${m.name}\t${m.monitor ? '(what a sink plays, not a microphone) ' : ''}${m.state}\n`,
    );
  return 0;
}
