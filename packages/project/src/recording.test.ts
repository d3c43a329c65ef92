import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  deleteRecording,
  listRecordings,
  newRecordingId,
  RECORDING_ID,
  type ManifestStep,
} from './recording.ts';

const root = mkdtempSync(path.join(os.tmpdir(), 'rb-recording-format-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A recording folder as the recorder leaves it: recording.json, manifest.jsonl and screenshots/. */
function write(dir: string, id: string, steps: number, meta: Record<string, unknown> = {}): string {
  const here = path.join(dir, id);
  mkdirSync(path.join(here, 'screenshots'), { recursive: true });
  writeFileSync(path.join(here, 'screenshots', 'start.png'), 'png');
  const lines: string[] = [];
  for (let i = 1; i <= steps; i++) {
    const step: ManifestStep = {
      step: i,
      at: i * 100,
      screenshot: `screenshots/step-${i}.png`,
      action: { type: 'press', key: 'Enter' },
      window: null,
    };
    writeFileSync(path.join(here, step.screenshot), 'png');
    lines.push(JSON.stringify(step));
  }
  writeFileSync(path.join(here, 'manifest.jsonl'), lines.map((l) => l + '\n').join(''));
  writeFileSync(
    path.join(here, 'recording.json'),
    JSON.stringify({ id, version: 1, startScreenshot: 'screenshots/start.png', ...meta }),
  );
  return here;
}

describe('the recording format', () => {
  it('makes ids that its own pattern accepts, and no two alike', () => {
    const a = newRecordingId();
    const b = newRecordingId();
    expect(a).toMatch(RECORDING_ID);
    expect(b).toMatch(RECORDING_ID);
    expect(a).not.toBe(b);
  });

  it('lists recordings newest first, with steps, bytes, an ending and spaced thumbnails', async () => {
    const dir = path.join(root, 'list');
    write(dir, 'rec-20260101-100000-aaaaaa', 10, {
      startedAt: '2026-01-01T10:00:00.000Z',
      endedAt: '2026-01-01T10:01:00.000Z',
      durationMs: 60_000,
      stopReason: 'stopped',
      message: 'stopped',
    });
    write(dir, 'rec-20260102-100000-bbbbbb', 1, { startedAt: '2026-01-02T10:00:00.000Z', recording: true });
    mkdirSync(path.join(dir, 'not-a-recording'));
    const list = await listRecordings(dir, 3);
    expect(list.map((r) => r.id)).toEqual(['rec-20260102-100000-bbbbbb', 'rec-20260101-100000-aaaaaa']);
    const [going, done] = list;
    expect(going).not.toHaveProperty('endedAt');
    expect(going!.steps).toBe(1);
    expect(done).toMatchObject({ steps: 10, durationMs: 60_000, stopReason: 'stopped' });
    expect(done!.thumbnails).toEqual([
      'screenshots/start.png',
      'screenshots/step-1.png',
      'screenshots/step-6.png',
    ]);
    expect(done!.bytes).toBeGreaterThan(0);
  });

  it('leaves out a recording whose recording.json is a FIFO or a link, without waiting on it', async () => {
    const dir = path.join(root, 'hostile');
    const fifo = write(dir, 'rec-20260103-100000-cccccc', 1);
    rmSync(path.join(fifo, 'recording.json'));
    execFileSync('mkfifo', [path.join(fifo, 'recording.json')]);
    const link = write(dir, 'rec-20260104-100000-dddddd', 1);
    rmSync(path.join(link, 'recording.json'));
    symlinkSync('/etc/passwd', path.join(link, 'recording.json'));
    write(dir, 'rec-20260105-100000-eeeeee', 1, { startedAt: '2026-01-05T10:00:00.000Z' });
    expect((await listRecordings(dir)).map((r) => r.id)).toEqual(['rec-20260105-100000-eeeeee']);
  });

  it('deletes only a recording id of the folder, and says what an id looks like', () => {
    const dir = path.join(root, 'delete');
    const here = write(dir, 'rec-20260106-100000-ffffff', 1);
    expect(() => deleteRecording(dir, '../delete')).toThrow(/not a recording id \(rec-YYYYMMDD/);
    expect(() => deleteRecording(dir, 'rec-20260106-100000-000000')).toThrow(/no recording/);
    deleteRecording(dir, 'rec-20260106-100000-ffffff');
    expect(existsSync(here)).toBe(false);
  });

  it('lists nothing for a folder that is not there', async () => {
    expect(await listRecordings(path.join(root, 'missing'))).toEqual([]);
  });
});
