import { EventEmitter } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { utf8Boundary } from '@runboard/supervisor/run-output';
import { connect, DidEnd, DidOutputBytes, DidOutputSizes, on, type RunResult } from '../protocol/index.ts';
import { streamRun, type AttachSource } from './attach.ts';
import { JailOutput } from './output-files.ts';

describe('utf8Boundary', () => {
  it('never cuts inside a multi-byte character', () => {
    const b = Buffer.from('a✓b世界🙂');
    for (let len = 0; len <= b.length; len++) {
      const cut = utf8Boundary(b, len);
      expect(cut).toBeLessThanOrEqual(len);
      expect(b.subarray(0, cut).toString('utf8')).not.toContain('\uFFFD');
      expect(len - cut).toBeLessThan(4);
    }
  });
});

describe('streamRun with files', () => {
  /** A live run's source whose output files the jail has not been handed yet. */
  function liveRun(): { output: JailOutput; src: AttachSource; end: (r: RunResult) => void } {
    const dir = mkdtempSync(path.join(tmpdir(), 'rb-attach-'));
    const output = new JailOutput(dir);
    const signals = new EventEmitter();
    let final = false;
    let end!: (r: RunResult) => void;
    const ended = new Promise<RunResult>((resolve) => (end = resolve));
    const src: AttachSource = {
      runId: '20261128-154500-abcdef',
      dir,
      events: { path: path.join(dir, 'events.jsonl'), committed: () => 0, isFinal: () => final },
      outputSizes: () => ({ ...output.committed }),
      isFinal: () => final,
      eventOffset: () => undefined,
      recentEvent: () => undefined,
      outputMade: () => output.made,
      signals,
      result: () => ended,
    };
    return {
      output,
      src,
      end: (r) => {
        final = true;
        signals.emit('final');
        end(r);
      },
    };
  }

  async function attach(
    src: AttachSource,
  ): Promise<{ frames: number; sizes: number[]; done: Promise<void> }> {
    const [a, b] = [new PassThrough(), new PassThrough()];
    const server = connect(a, b);
    const client = connect(b, a);
    const seen = { frames: 0, sizes: [] as number[] };
    on(client, DidOutputBytes, () => seen.frames++);
    on(client, DidOutputSizes, (p) => seen.sizes.push(p.stdout));
    // the result is not looked at (the raw notification: a made-up result would not pass the schema)
    const ended = new Promise<void>((resolve) => client.onNotification(DidEnd.type, () => resolve()));
    server.listen();
    client.listen();
    const abort = new AbortController();
    const done = streamRun(server, src, { events: 0, stdout: 0, stderr: 0 }, abort.signal, 'files').then(
      () => ended,
    );
    return {
      ...seen,
      get frames() {
        return seen.frames;
      },
      get sizes() {
        return seen.sizes;
      },
      done,
    };
  }

  it('a client attached before the files exist waits for them and is sent sizes, not the bytes', async () => {
    const { output, src, end } = liveRun();
    const seen = await attach(src);
    await new Promise((r) => setImmediate(r)); // the attachment is waiting, the files are not made yet
    await output.open();
    writeFileSync(path.join(src.dir, 'stdout.log'), 'hello\n');
    output.sizes({ stdout: 6, stderr: 0, order: 0 });
    src.signals.emit('grow');
    end({} as RunResult);
    await seen.done;
    expect(seen.frames).toBe(0);
    expect(seen.sizes.at(-1)).toBe(6);
  });

  it('a run that ended before its files were made is sent as bytes (none), not left waiting', async () => {
    const { output, src, end } = liveRun();
    const seen = await attach(src);
    await output.close();
    end({} as RunResult);
    await seen.done;
    expect(seen.sizes).toEqual([]);
    expect(seen.frames).toBe(0);
  });
});
