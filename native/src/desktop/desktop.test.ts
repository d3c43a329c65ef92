// The facade's promise plumbing and typed errors, without a display: the addon's desktop thread
// settles promises in every JavaScript environment that loaded it (main thread and worker threads).
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { desktop } from './desktop.ts';
import { DesktopError } from './types.ts';
import { nativeBuildDir } from '../binding.ts';

describe('desktop facade', () => {
  it('rejects with a typed NO_DISPLAY error when there is no display', async () => {
    process.env.DISPLAY = '';
    const err = await desktop.listWindows().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DesktopError);
    expect((err as DesktopError).code).toBe('NO_DISPLAY');
    await expect(desktop.click(1, 1)).rejects.toMatchObject({ code: 'NO_DISPLAY' });
    await expect(desktop.type('x')).rejects.toMatchObject({ code: 'NO_DISPLAY' });
  });

  it('settles promises in a worker thread that loaded the addon too', async () => {
    const addon = `${nativeBuildDir()}/runboard_native.node`;
    const code = `
      const { parentPort } = require('node:worker_threads');
      process.env.DISPLAY = '';
      const b = require(${JSON.stringify(addon)});
      b.desktopListWindows({}).then(() => parentPort.postMessage('resolved'), (e) => parentPort.postMessage(e.code));
    `;
    const worker = new Worker(code, { eval: true });
    const [fromWorker, fromMain] = await Promise.all([
      new Promise((res) => worker.once('message', res)),
      desktop.listWindows().catch((e: DesktopError) => e.code),
    ]);
    await worker.terminate();
    expect(fromWorker).toBe('NO_DISPLAY');
    expect(fromMain).toBe('NO_DISPLAY');
  });
});
