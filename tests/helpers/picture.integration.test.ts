/**
 * `savePicture` (tests/helpers/picture.ts) against Debian's Chromium, failing for real. A page 40,000
 * CSS px square, taken whole (`fullPage`), is more than Chromium's GPU process can copy: that process
 * exits (its log says "GPU process exited unexpectedly") and DevTools answers "Unable to capture
 * screenshot", the answer CI met in session 16 from another cause (a view with no frame to copy for a
 * moment). Chromium starts a new GPU process, and the renderer paints again once it is there, which is
 * what the helper waits for. The page shrinks when the first capture has failed, as a view comes
 * back, and the next capture makes the picture. A page that stays too large fails after the tries,
 * naming the file; any other error fails at once.
 *
 * Each test has a browser of its own: Chromium gives up (the browser exits) at its third GPU process
 * lost, so no browser here loses more than two.
 *
 * A hidden page: Playwright keeps every page it opens shown (its focus emulation counts as a capture
 * of the page), so the test of a hidden page drives a Chromium Playwright attached to with
 * `noDefaults`, whose first window's tab really hides (`document.visibilityState` "hidden") when
 * another tab opens in front of it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHROMIUM_ARGS, launchBrowser } from '../e2e/helpers/board.ts';
import { isCaptureFailure, savePicture } from './picture.ts';

/** Larger than Chromium can copy in one piece (33,000 px square fails too; 9,000 does not). */
const TOO_LARGE = 40_000;
/** The page's size once it is small again. */
const SMALL = { width: 320, height: 200 };

let browser: Browser | undefined;
/** The Chromium of the hidden-page test (started by the test, not by Playwright). */
let chrome: ChildProcess | undefined;
let page: Page;
const dir = mkdtempSync(path.join(os.tmpdir(), 'rb-picture-'));

beforeEach(async () => {
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 800, height: 600 } });
  await page.setContent(
    `<style>body{margin:0}</style><div id="box" style="width:${TOO_LARGE}px;height:${TOO_LARGE}px;` +
      'background:linear-gradient(#2a6,#26a)">a picture</div>',
  );
});

afterEach(async () => {
  await browser?.close();
  browser = undefined;
  // Also after a failure (a timeout): the test's own Chromium ends with it.
  if (chrome && chrome.exitCode === null && chrome.signalCode === null) {
    chrome.kill();
    await once(chrome, 'exit');
  }
  chrome = undefined;
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Makes the page small: the box fits in the viewport and nothing scrolls. */
async function shrink(p: Page): Promise<void> {
  await p.evaluate(({ width, height }) => {
    const box = document.getElementById('box')!;
    box.style.width = `${width}px`;
    box.style.height = `${height}px`;
  }, SMALL);
}

/** Width and height from a PNG's header. */
function pngSize(file: string): { width: number; height: number } {
  const b = readFileSync(file);
  expect(b.subarray(1, 4).toString()).toBe('PNG');
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

describe('savePicture', () => {
  it('takes the picture after a capture that Chromium could not make, once the page has painted again', async () => {
    const file = path.join(dir, 'retried.png');
    const failures: string[] = [];
    await savePicture(page, file, {
      fullPage: true,
      onCaptureFailed: async (attempt, error) => {
        failures.push(`${attempt}: ${error.message.split('\n')[0]}`);
        await shrink(page);
      },
    });
    // The first capture failed for real, with Chromium's own words; the second made the picture.
    expect(failures).toEqual([
      '1: page.screenshot: Protocol error (Page.captureScreenshot): Unable to capture screenshot',
    ]);
    // The picture is of the page as it was painted after the failure: the viewport, nothing larger.
    expect(pngSize(file)).toEqual({ width: 800, height: 600 });
  });

  it('fails after its tries, naming the file', async () => {
    const file = path.join(dir, 'never.png');
    const attempts: number[] = [];
    const error = await savePicture(page, file, {
      fullPage: true,
      tries: 2,
      onCaptureFailed: (attempt) => {
        attempts.push(attempt);
      },
    }).catch((e: unknown) => e);
    // (CI saw [1] once: what the helper said then is in the message)
    expect(attempts, `savePicture said: ${(error as Error | undefined)?.message}`).toEqual([1, 2]);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(`the picture ${file} could not be taken`);
    expect(isCaptureFailure((error as Error).cause)).toBe(true);
    expect(existsSync(file)).toBe(false);
  });

  it('fails at once on any other error (a zero-sized view), without trying again', async () => {
    await shrink(page);
    await page.setViewportSize({ width: 0, height: 0 });
    const file = path.join(dir, 'zero.png');
    let calls = 0;
    const error = await savePicture(page, file, {
      onCaptureFailed: () => {
        calls++;
      },
    }).catch((e: unknown) => e);
    expect(calls).toBe(0);
    expect(String(error)).toContain('Cannot take screenshot with 0 width');
    expect(isCaptureFailure(error)).toBe(false);
  });

  it('fails at once, naming the file, when the page is hidden (it would paint no frame to wait for)', async () => {
    const started = spawn(
      '/usr/bin/chromium',
      [
        ...CHROMIUM_ARGS,
        '--remote-debugging-port=0',
        `--user-data-dir=${path.join(dir, 'profile')}`,
        'about:blank',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    chrome = started;
    // Chromium says where DevTools listens once it does.
    let said = '';
    const endpoint = await new Promise<string>((resolve, reject) => {
      started.stderr.on('data', (d: Buffer) => {
        said += d.toString();
        const ws = /ws:\/\/\S+/.exec(said);
        if (ws) resolve(ws[0]);
      });
      started.once('exit', (code) =>
        reject(new Error(`chromium exited (${code}) before DevTools listened: ${said}`)),
      );
    });
    const attached = await chromium.connectOverCDP(endpoint, { noDefaults: true });
    const context = attached.contexts()[0]!;
    const tab = context.pages()[0]!;
    await tab.setViewportSize({ width: 800, height: 600 });
    await tab.setContent(
      `<div style="width:${TOO_LARGE}px;height:${TOO_LARGE}px;background:#26a">a picture</div>`,
    );
    const file = path.join(dir, 'hidden.png');
    const failures: number[] = [];
    const error = await savePicture(tab, file, {
      fullPage: true,
      onCaptureFailed: async (attempt) => {
        failures.push(attempt);
        // Another tab in front of it: the page is hidden for real, and nothing will show it again.
        // The renderer hears of it on another channel than DevTools': wait for it in the page.
        await context.newPage();
        await tab.evaluate(
          () =>
            document.visibilityState === 'hidden' ||
            new Promise<boolean>((resolve) => {
              document.addEventListener('visibilitychange', () => resolve(true), { once: true });
            }),
        );
      },
    }).catch((e: unknown) => e);
    // One capture failed for real; none was tried again, and no frame was waited for.
    expect(failures).toEqual([1]);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(`the picture ${file} could not be taken`);
    expect((error as Error).message).toContain('the page is hidden');
    expect(isCaptureFailure((error as Error).cause)).toBe(true);
    expect(existsSync(file)).toBe(false);
    await attached.close();
  });
});
