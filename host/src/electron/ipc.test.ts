import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { Invalid, NotFound } from '../core/board-errors.ts';
import type { CallHandlers, FileHandlers } from '../core/board-dispatch.ts';
import { callNames } from '../shared/board-methods.ts';
import { channelOf, PICK_FOLDER, Stream } from './channels.ts';
import { appResponse, ipcHandlers } from './ipc.ts';

/** Files of one run with one screenshot, and an export of one known run. */
function fileHandlers(): FileHandlers {
  return {
    runFile: (p) => {
      if (p.name !== 'shot.png') throw new NotFound(`no screenshot ${p.name}`);
      return { type: 'image/png', path: shot };
    },
    liveFrame: () => ({ type: 'image/jpeg', bytes: Buffer.from('jpeg') }),
    recordingFile: () => {
      throw new NotFound('no recordings here');
    },
    exportRun: (p) => {
      if (p.runId !== '20250101-000000-abcdef') throw new NotFound(`no run ${p.runId}`);
      return {
        type: 'application/gzip',
        download: `run-${p.runId}.tar.gz`,
        write: async (o) => void o.end('tgz'),
      };
    },
  };
}

/** What the next folder dialogs answer (undefined: cancelled). */
const dialogAnswer: (string | undefined)[] = [];

/** Handlers that record what reached the host core (the BoardService's side of dispatch). */
function recording() {
  const seen: [string, unknown][] = [];
  const calls = Object.fromEntries(
    callNames.map((n) => [n, (p: unknown) => (seen.push([n, p]), n === 'board' ? { cards: [] } : undefined)]),
  ) as unknown as CallHandlers;
  const files = fileHandlers();
  const sent: unknown[][] = [];
  const streamed: string[] = [];
  const ipc = ipcHandlers({
    calls,
    files,
    streamRun: (runId, viewer) => {
      streamed.push(runId);
      viewer.send({ type: 'lines', stream: 'stdout', lines: ['a'] });
      return () => streamed.push(`stopped ${runId}`);
    },
    send: (...args) => sent.push(args),
    saveDialog: async (name) => `/nowhere/${name}`,
    folderDialog: async () => (dialogAnswer.length ? dialogAnswer.shift() : undefined),
    openForWrite: () => new PassThrough().resume(),
  });
  const invoke = (channel: string, ...args: unknown[]) => {
    const fn = ipc.handlers.get(channel);
    if (!fn) throw new Error(`no handler for ${channel}`);
    return fn(...args);
  };
  return { seen, sent, streamed, ipc, invoke };
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'rb-ipc-'));
const shot = path.join(dir, 'shot.png');
writeFileSync(shot, 'png');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("Electron's IPC dispatch (the board's method table, checked like HTTP)", () => {
  it('every call of the table has its channel', () => {
    const { ipc } = recording();
    for (const n of callNames) expect(ipc.handlers.has(channelOf(n))).toBe(true);
  });

  it('a move to a column that does not exist never reaches the host core', async () => {
    const { seen, invoke } = recording();
    await expect(invoke(channelOf('move'), { id: 'a', to: 'sideways', index: 0 })).rejects.toThrow(Invalid);
    await expect(invoke(channelOf('move'), { id: 'a', to: 'sideways', index: 0 })).rejects.toThrow(
      /to: Invalid option/,
    );
    await expect(invoke(channelOf('move'), 'a', 'queued', 0)).rejects.toThrow(/move: .*expected object/);
    expect(seen).toEqual([]);
    await invoke(channelOf('move'), { id: 'a', to: 'queued', index: 2, extra: 'dropped' });
    expect(seen).toEqual([['move', { id: 'a', to: 'queued', index: 2 }]]);
  });

  it('settings from the renderer are checked before they can be written to config.yaml', async () => {
    const { seen, invoke } = recording();
    const bad = [
      { maxConcurrency: 0, flows: [], columnLimits: {} },
      { maxConcurrency: 2, flows: [{ name: 'a', cap: -1 }], columnLimits: {} },
      { maxConcurrency: 2, flows: [], columnLimits: { sideways: 1 } },
      { maxConcurrency: 2, flows: 'all', columnLimits: {} },
      { maxConcurrency: '2; rm -rf', flows: [], columnLimits: {} },
    ];
    for (const s of bad) await expect(invoke(channelOf('saveSettings'), s)).rejects.toThrow(Invalid);
    expect(seen).toEqual([]);
    const good = { maxConcurrency: 2, flows: [{ name: 'a', cap: 1 }], columnLimits: { done: 5 } };
    await invoke(channelOf('saveSettings'), { ...good, injected: { yes: 1 } });
    expect(seen).toEqual([['saveSettings', good]]);
  });

  it('answers and settling are checked too', async () => {
    const { seen, invoke } = recording();
    await expect(
      invoke(channelOf('answer'), { id: 'a', answers: [{ index: -1, answer: 'x' }] }),
    ).rejects.toThrow(/answers\.0\.index/);
    await expect(invoke(channelOf('settleWorktree'), { runId: 'r', how: 'explode' })).rejects.toThrow(/how/);
    expect(seen).toEqual([]);
    expect(await invoke(channelOf('board'))).toEqual({ cards: [] });
  });

  it('run streams: ids and parameters checked, stop ends the stream', async () => {
    const { streamed, sent, invoke, ipc } = recording();
    expect(() => invoke(Stream.start, 'x', { runId: 'r' })).toThrow(/stream id/);
    expect(() => invoke(Stream.start, 1, {})).toThrow(/runStream: runId/);
    invoke(Stream.start, 1, { runId: 'r1' });
    expect(sent[0]?.[1]).toBe(1);
    invoke(Stream.ack, 1, 1e9);
    invoke(Stream.stop, 1);
    invoke(Stream.start, 2, { runId: 'r2' });
    ipc.closeAll();
    expect(streamed).toEqual(['r1', 'stopped r1', 'r2', 'stopped r2']);
  });

  it('export checks the run before asking where to save', async () => {
    const { invoke } = recording();
    await expect(invoke(channelOf('exportRun'), { runId: '20200101-000000-000000' })).rejects.toThrow(
      /no run/,
    );
    await invoke(channelOf('exportRun'), { runId: '20250101-000000-abcdef' });
  });

  it('the folder dialog grants only the folder the person chose there, never one the renderer names', async () => {
    const { invoke, seen } = recording();
    dialogAnswer.push('/home/u/chosen', undefined);
    await invoke(PICK_FOLDER, { path: '/' });
    expect(seen).toEqual([['grantFolder', { path: '/home/u/chosen' }]]);
    expect(await invoke(PICK_FOLDER, { path: '/' })).toEqual({ canceled: true }); // cancelled: nothing granted
    expect(seen).toHaveLength(1);
  });
});

describe('runboard://app responses', () => {
  it('serves the renderer files, screenshots by the table route, and refuses the rest clearly', async () => {
    writeFileSync(path.join(dir, 'index.html'), '<html>');
    const get = (u: string) => appResponse(new URL(u), fileHandlers(), dir);
    const page = await get('runboard://app/index.html');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    const img = await get('runboard://app/api/runs/r1/file?name=shot.png');
    expect(img.status).toBe(200);
    expect(img.headers.get('content-type')).toBe('image/png');
    expect(await img.text()).toBe('png');
    expect((await get('runboard://app/api/runs/r1/file?name=other.png')).status).toBe(404);
    expect((await get('runboard://app/api/runs/r1/file')).status).toBe(400);
    const bad = await get('runboard://app/api/runs/%E0%A4%A/live');
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/%-encoding/);
    expect((await get('runboard://app/../../etc/passwd')).status).toBe(404);
    expect((await get('runboard://app/api/runs/r1/export')).status).toBe(404);
  });
});
