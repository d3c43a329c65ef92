// Detach and re-attach: the run log on disk is the source of truth, so a client (or a restarted host)
// that re-attaches from the offsets it has gets every line exactly once, in order.
import { readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AttachRun,
  call,
  connect,
  DidEnd,
  DidOutputBytes,
  DidOutputSizes,
  on,
  type Offsets,
  type RunResult,
} from '@runboard/supervisor/protocol';
import { SupervisorClient } from '../../host/src/core/supervisor-client.ts';
import { Harness, sleep, waitUntil } from '../helpers/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
});
afterAll(async () => {
  await h.stop();
});

describe('attach', () => {
  it('host detach + re-attach (new connection) during a 100k-line run: every line once, in order', async () => {
    // 100k numbered lines on stdout, paced so the run is still going when we re-attach.
    const script = `for (let i = 0; i < 100000; i++) { process.stdout.write('line ' + i + '\\n'); if (i % 5000 === 4999) await new Promise(r => setTimeout(r, 100)); }`;
    const { runId } = await h.launch(['node', '--input-type=module', '-e', script]);
    let received = '';
    let ended: RunResult | undefined;
    const first = await SupervisorClient.connect(h.paths);
    await first.attach(runId, { onOutput: (_s, d) => (received += d) });
    await waitUntil('some output', () => received.length > 0);
    const offsets = (await first.detach(runId)) as Offsets;
    first.close(); // the host goes away
    expect(offsets.stdout).toBe(Buffer.byteLength(received));
    const lostAt = received.length;
    await sleep(100); // output keeps flowing while nobody listens

    const second = await SupervisorClient.connect(h.paths); // a restarted host
    await new Promise<void>((resolve) => {
      void second.attach(
        runId,
        {
          onOutput: (_s, d) => (received += d),
          onEnd: (r) => {
            ended = r;
            resolve();
          },
        },
        offsets,
      );
    });
    second.close();
    expect(ended?.status).toBe('succeeded');
    expect(lostAt).toBeGreaterThan(0);
    expect(lostAt).toBeLessThan(received.length); // it really was mid-run
    const lines = received.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.length).toBe(100_000);
    for (let i = 0; i < lines.length; i++)
      if (lines[i] !== `line ${i}`) throw new Error(`line ${i} is ${JSON.stringify(lines[i])}`);
    expect(received).toBe(readFileSync(path.join(ended!.logDir, 'stdout.log'), 'utf8'));
  });

  it('re-attach to an ended run replays from disk, events from a given seq', async () => {
    const rec = await h.run('echo one; echo two');
    const client = await SupervisorClient.connect(h.paths);
    const events: number[] = [];
    let out = '';
    const result = await new Promise<RunResult>((resolve) => {
      void client.attach(
        rec.result.runId,
        { onEvent: (e) => events.push(e.seq), onOutput: (_s, d) => (out += d), onEnd: resolve },
        { events: 3, stdout: 4 },
      );
    });
    client.close();
    expect(out).toBe('two\n');
    expect(events[0]).toBe(3);
    expect(events).toEqual(rec.events.slice(3).map((e) => e.seq));
    expect(result.status).toBe('succeeded');
  });

  it('a client that reads the run files itself is sent their sizes only, and sees what frames would show', async () => {
    const { runId } = await h.launch('seq 1 200000; seq 1 1000 >&2');
    const socket = net.connect(h.paths.socket);
    await new Promise((r) => socket.once('connect', r));
    const conn = connect(socket, socket, { close: () => socket.destroy() });
    let frames = 0;
    let last = { stdout: 0, stderr: 0, dir: '' };
    on(conn, DidOutputBytes, () => frames++);
    on(conn, DidOutputSizes, (p) => (last = p));
    const ended = new Promise<RunResult>((resolve) => on(conn, DidEnd, (p) => resolve(p.result)));
    conn.listen();
    try {
      await call(conn, AttachRun, { runId, bytes: true, files: true });
      const result = await ended;
      // the bytes never crossed the socket; the last sizes are the files' whole
      expect(frames).toBe(0);
      expect(last.dir).toBe(result.logDir);
      expect(last.stdout).toBe(result.stdoutBytes);
      expect(last.stderr).toBe(result.stderrBytes);
      expect(result.stdoutBytes).toBe(statSync(path.join(result.logDir, 'stdout.log')).size);
    } finally {
      conn.dispose();
      socket.destroy();
    }
    // Through the client: the same output whether it reads the files or takes frames.
    const read = async (readFiles: boolean): Promise<string> => {
      const client = await SupervisorClient.connect(h.paths, { readFiles });
      let text = '';
      try {
        await new Promise<RunResult>((resolve, reject) => {
          client.attach(runId, { onOutput: (s, d) => (text += `${s}:${d}`), onEnd: resolve }).catch(reject);
        });
      } finally {
        client.close();
      }
      return text;
    };
    const [fromFiles, fromFrames] = [await read(true), await read(false)];
    expect(fromFiles).toBe(fromFrames);
    expect(fromFiles.length).toBeGreaterThan(1_000_000);
  });

  it('text reaches the client as written: ASCII lines and lines in other scripts alike', async () => {
    const { runId } = await h.launch(
      "for i in 1 2 3; do echo 'plain ascii line'; echo 'Grüße, naïve café ✓ 日本語 🙂'; done; echo '€ only' >&2",
    );
    let out = '';
    let err = '';
    const result = await new Promise<RunResult>((resolve) => {
      void h.client.attach(runId, {
        onOutput: (s, d) => (s === 'stdout' ? (out += d) : (err += d)),
        onEnd: resolve,
      });
    });
    expect(out).toBe('plain ascii line\nGrüße, naïve café ✓ 日本語 🙂\n'.repeat(3));
    expect(out).toBe(readFileSync(path.join(result.logDir, 'stdout.log'), 'utf8'));
    expect(err).toBe('€ only\n');
  });

  it('text comes in small pieces cut at line ends, or between characters in a line longer than a piece', async () => {
    const { runId } = await h.launch([
      'python3',
      '-c',
      "print('é' * 100000); [print(i) for i in range(200000)]",
    ]);
    const pieces: string[] = [];
    const result = await new Promise<RunResult>((resolve) => {
      void h.client.attach(runId, { onOutput: (_s, d) => pieces.push(d), onEnd: resolve });
    });
    expect(pieces.join('')).toBe(readFileSync(path.join(result.logDir, 'stdout.log'), 'utf8'));
    expect(pieces.join('')).not.toContain('\uFFFD'); // no character cut in two
    expect(Math.max(...pieces.map((p) => Buffer.byteLength(p)))).toBeLessThanOrEqual(64 * 1024);
    const lines = pieces.filter((p) => !p.startsWith('é'));
    expect(lines.length).toBeGreaterThan(10);
    for (const p of lines) expect(p.endsWith('\n')).toBe(true);
  });

  it('a 50 MB line and binary garbage are recorded whole and streamed in bounded chunks', async () => {
    const { runId } = await h.launch([
      'node',
      '-e',
      "process.stdout.write('x'.repeat(50*1024*1024)+'\\n'); process.stderr.write(Buffer.from([0xff,0xfe,0x00,0xc3,0x28,0x0a,0xe2,0x82]));",
    ]);
    let stdoutBytes = 0;
    let maxChunk = 0;
    let stderrLen = 0;
    let stderrText = '';
    const result = await new Promise<RunResult>((resolve) => {
      void h.client.attach(runId, {
        onOutput: (s, d, _o, len) => {
          if (s === 'stdout') {
            stdoutBytes += len;
            maxChunk = Math.max(maxChunk, len);
          } else {
            stderrLen += len;
            stderrText += d;
          }
        },
        onEnd: resolve,
      });
    });
    expect(result.status).toBe('succeeded');
    expect(stdoutBytes).toBe(50 * 1024 * 1024 + 1);
    expect(maxChunk).toBeLessThanOrEqual(1024 * 1024);
    expect(statSync(path.join(result.logDir, 'stdout.log')).size).toBe(50 * 1024 * 1024 + 1);
    expect(stderrLen).toBe(8);
    expect(readFileSync(path.join(result.logDir, 'stderr.log'))).toEqual(
      Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x0a, 0xe2, 0x82]),
    );
    expect(stderrText).toContain('\uFFFD'); // invalid bytes shown as replacement characters, nothing lost on disk
    expect((await h.client.status()).activeRuns).toBe(0);
  });
});
