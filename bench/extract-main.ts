/**
 * Extraction request size per minute of video (docs/bench-extract.md): what a recording costs on the
 * wire when it becomes a task. A video made with the recorder's encoding (x264 ultrafast, crf 30,
 * 15 fps, 1280x800) of a still screen and of a busy one, then the `extract` runner against the
 * scripted model server: Gemini (the video uploaded through the Files API, then generateContent) and
 * OpenAI (12 frames sampled at 768 px wide, plus the prompt). Bytes are scaled to one minute of video.
 * Run: node bench/extract.mjs [seconds]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkerSpec } from '@runboard/supervisor/protocol';
import { ExtractRunner } from '../worker/src/runners/extract.ts';
import { startModelServer } from '../tests/fixtures/model-server/server.ts';

const SECONDS = Number(process.argv[2] ?? 60);
const ANSWER =
  'TaskDetected: true\nStatus: TASK_FOUND\nNoTaskReason: none\n\n# Task\nx\n\n## Questions\n- None.\n';
const SOURCES = {
  still: 'smptebars=size=1280x800:rate=15',
  busy: 'testsrc2=size=1280x800:rate=15',
};

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rb-bench-extract-'));
  const model = await startModelServer({
    episodes: [
      { name: 'x', requireTools: false, turns: Array(100).fill({ text: ANSWER }), indexBy: 'requests' },
    ],
    gemini: { pollsBeforeActive: 0 },
  });
  const mb = (n: number): string => (n / 1024 ** 2).toFixed(2);
  const kb = (n: number): string => (n / 1024).toFixed(0);
  try {
    const rows: string[] = [];
    for (const [name, src] of Object.entries(SOURCES)) {
      const video = path.join(dir, `${name}.mp4`);
      execFileSync('ffmpeg', [
      '-v', 'error', '-nostdin', '-y', '-f', 'lavfi', '-i', src, '-t', String(SECONDS),
      '-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '30', '-pix_fmt', 'yuv420p', video,
    ]); // prettier-ignore
      const perMin = 60 / SECONDS;
      const videoBytes = statSync(video).size;
      for (const [provider, baseUrl] of [
        ['gemini', model.url],
        ['openai', `${model.url}/v1`],
      ] as const) {
        const spec = {
          runId: '20250101-000000-aaaaaa',
          runner: 'extract',
          flow: {
            name: 'extract',
            runner: 'extract',
            prompt: path.resolve('prompts/task_extraction'),
            extract: { input: video },
          },
          card: { path: path.join(dir, 'card.md') },
          workspace: dir,
          heartbeatIntervalMs: 1000,
          model: {
            provider,
            baseUrl,
            token: 'bench',
            model: provider === 'gemini' ? 'gemini-2.5-pro' : 'gpt-5.2',
          },
          artifactsDir: path.join(dir, 'artifacts'),
        } as WorkerSpec;
        const out = await new ExtractRunner().run({
          spec,
          env: { ...process.env, TMPDIR: dir },
          progress: () => undefined,
          log: () => undefined,
        });
        if (out.status !== 'succeeded') throw new Error(`${provider}: ${out.summary}`);
        const m = out.metrics as Record<string, number>;
        // per extraction of one minute of video: the upload scales with the video, the request does not
        const upload = (m.uploadBytes ?? 0) * perMin;
        const total = upload + m.requestBytes!;
        rows.push(
          `| ${name} | ${provider} | ${mb(videoBytes * perMin)} | ${mb(upload)} | ${kb(m.requestBytes!)} | ${mb(total)} | ${(total / (videoBytes * perMin)).toFixed(3)} |`,
        );
      }
    }
    console.log(
      `bytes sent per extraction of one minute of video (measured on ${SECONDS} s, 1280x800 at 15 fps)`,
    );
    console.log('| screen | provider | video MB | upload MB | request KB | total MB | total / video |');
    console.log('|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
  } finally {
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
