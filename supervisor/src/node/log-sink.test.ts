// The supervisor's log on a disk that stays full: /dev/full answers every write ENOSPC, as the soak's
// state root did for the last supervisor's log (docs/soak.md, soak 3's invariant 2).
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { logSink } from './log-sink.ts';

const line = (i: number): string => `${JSON.stringify({ level: 30, i, msg: 'x'.repeat(200) })}\n`;

/** Resolves once the sink has tried (and failed) its write. */
async function settled(sink: ReturnType<typeof logSink>): Promise<void> {
  for (let i = 0; i < 1000 && sink.state().failing === undefined; i++)
    await new Promise((r) => setTimeout(r, 5));
}

describe('logSink', () => {
  it('holds at most maxBytes on a full disk, counts what it dropped, and does not wait at exit', async () => {
    const fd = openSync('/dev/full', 'w');
    try {
      const sink = logSink(fd, { maxBytes: 64 * 1024, retryMs: 60_000 });
      sink.write(line(0));
      await settled(sink);
      expect(sink.state().failing).toBe('ENOSPC');
      for (let i = 1; i <= 10_000; i++) sink.write(line(i)); // ~2.3 MB of lines
      const s = sink.state();
      expect(s.buffered).toBeLessThanOrEqual(64 * 1024);
      expect(s.buffered).toBeGreaterThan(60 * 1024);
      expect(s.dropped).toBeGreaterThan(9_000);
      sink.flushOnce(); // returns: one attempt, no retry loop
      expect(sink.state().failing).toBe('ENOSPC');
    } finally {
      closeSync(fd);
    }
  });

  it('writes every line in order when the disk has room, and says how many it dropped', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rb-log-sink-'));
    const file = path.join(dir, 'log');
    const fd = openSync(file, 'a');
    try {
      const sink = logSink(fd, { maxBytes: 10 * 1024 });
      for (let i = 0; i < 200; i++) sink.write(line(i));
      const { dropped } = sink.state();
      expect(dropped).toBeGreaterThan(0);
      for (let i = 0; i < 1000 && sink.state().buffered > 0; i++) await new Promise((r) => setTimeout(r, 5));
      const lines = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { i?: number; dropped?: number });
      const kept = lines.filter((l) => l.i !== undefined).map((l) => l.i);
      expect(kept).toEqual([...Array(200 - dropped).keys()]);
      expect(lines.at(-1)?.dropped).toBe(dropped);
    } finally {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
