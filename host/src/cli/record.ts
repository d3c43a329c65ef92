/**
 * `runboard record`: records a demonstration on an X display (the person's input events, a screenshot
 * before each) into `<out>/<id>/` (default: `recordings/` in the current directory): manifest.jsonl, screenshots/,
 * recording.json, video.mp4 (the screen with the microphone). Stops with Ctrl+C, SIGTERM or the stop
 * key (an X keysym name, default Pause), or at the limits (5 minutes, 2 GB).
 */
import path from 'node:path';
import { parseArgs } from 'node:util';

export const RECORD_USAGE = `record [--display :N] [--monitor NAME] [--mic NAME|default|none] [--no-audio] [--no-video] [--out DIR] [--stop-key KEY]
                                           record a demonstration until Ctrl+C or KEY (Pause)
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
      json: { type: 'boolean' },
    },
  });
  if (values['list-mics']) return listMics(values.json === true);
  if (values.mic !== undefined && values['no-audio'])
    throw new RecordUsageError('--mic and --no-audio contradict each other: pass one of them');
  if (values.mic !== undefined && !values.mic.trim())
    throw new RecordUsageError(
      '--mic takes a source name (see `runboard record --list-mics`), default or none',
    );
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
  const rec = await Recording.start({
    dir: out,
    stopKey,
    display: process.env.DISPLAY,
    ...(region ? { region, monitor: values.monitor } : {}),
    ...(values['no-video']
      ? {}
      : { video: { mic: values['no-audio'] ? 'none' : (values.mic ?? 'default') } }),
  });
  const say = (obj: Record<string, unknown>, text: string): void => {
    if (values.json) process.stdout.write(JSON.stringify(obj) + '\n');
    else process.stderr.write(text + '\n');
  };
  // In --json the warnings are a field of the `recording` and `stopped` lines.
  const warn = (ws: string[]): void => {
    if (!values.json) for (const w of ws) process.stderr.write(`warning: ${w}\n`);
  };
  const printed = rec.warnings.length;
  warn(rec.warnings);
  say(
    { type: 'recording', id: rec.id, dir: rec.dir, warnings: rec.warnings },
    `recording ${rec.id} into ${rec.dir}; Ctrl+C or the ${stopKey} key stops`,
  );
  const stop = (): void => void rec.stop();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
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
