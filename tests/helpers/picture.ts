/**
 * Pictures that tests take for people to look at (test-results/, then docs/images), never asserted on.
 *
 * Chromium's `Page.captureScreenshot` answers "Unable to capture screenshot" when its copy of the
 * view's compositor surface comes back empty five times back to back (page_handler.cc, session 17's
 * lessons in DEVELOPERS.md): the view had no frame to copy then. That fails a test whose behaviour
 * was right, so `savePicture` waits, on exactly that error, for the page to paint a new frame (two
 * `requestAnimationFrame`s in the page: a condition, not a sleep) and tries again, up to
 * `PICTURE_TRIES` times in all; then it fails, naming the file. Any other error fails at once.
 * A hidden page (a background tab, a minimized window) paints no frames until something outside the
 * test's await shows it, so waiting for its frame could last until the test's timeout: when the page
 * is hidden at that point, or hides before its frames come, `savePicture` fails at once, naming the
 * file and why. The wait for a visible page's frames has no bound of its own: on a loaded machine the
 * frames come late, but they come. A picture a test asserts on (pixels compared, an image read back)
 * is taken with `screenshot()` itself, so that its failure stays loud.
 */
import type { Locator, Page } from 'playwright-core';

/** Captures tried in all before `savePicture` gives up. */
export const PICTURE_TRIES = 4;

/** What Chromium answers when its copy of the view's surface came back empty. */
const CAPTURE_FAILED = 'Unable to capture screenshot';

export interface PictureOptions {
  /** The whole scrollable page (Page targets only). */
  fullPage?: boolean;
  /** Captures tried in all (default `PICTURE_TRIES`). */
  tries?: number;
  /** Called after each capture that failed with Chromium's error, before the wait for a new frame. */
  onCaptureFailed?: (attempt: number, error: Error) => void | Promise<void>;
}

/** True when `error` is Chromium's "Unable to capture screenshot" (Playwright prefixes its own words). */
export function isCaptureFailure(error: unknown): error is Error {
  return error instanceof Error && error.message.includes(CAPTURE_FAILED);
}

/**
 * Saves a picture of `target` (a page, or an element's locator) to `file`. On "Unable to capture
 * screenshot" it waits for the page to be visible and paint a new frame and tries again; after
 * `tries` such failures it throws an error naming `file`.
 */
export async function savePicture(
  target: Page | Locator,
  file: string,
  options: PictureOptions = {},
): Promise<void> {
  const { onCaptureFailed, fullPage, tries = PICTURE_TRIES } = options;
  const page = isPage(target) ? target : target.page();
  for (let attempt = 1; ; attempt++) {
    try {
      if (isPage(target)) await target.screenshot({ path: file, ...(fullPage ? { fullPage } : {}) });
      else await target.screenshot({ path: file });
      return;
    } catch (error) {
      if (!isCaptureFailure(error)) throw error;
      await onCaptureFailed?.(attempt, error);
      if (attempt >= tries) {
        throw new Error(
          `the picture ${file} could not be taken: Chromium answered "${CAPTURE_FAILED}" ${attempt} times, ` +
            'each after the page had painted a new frame (is the page shown, and not zero-sized?)',
          { cause: error },
        );
      }
      let frame: 'painted' | 'hidden';
      try {
        frame = await nextFrame(page);
      } catch (waitError) {
        throw new Error(
          `the picture ${file} could not be taken: Chromium answered "${CAPTURE_FAILED}", and the wait ` +
            `for the page's next frame failed: ${(waitError as Error).message.split('\n')[0]}`,
          { cause: waitError },
        );
      }
      if (frame === 'hidden') {
        throw new Error(
          `the picture ${file} could not be taken: Chromium answered "${CAPTURE_FAILED}" and the page is ` +
            'hidden (a background tab or a minimized window), which paints no frame to capture until it is ' +
            'shown: bring it to the front (page.bringToFront()) before taking its picture',
          { cause: error },
        );
      }
    }
  }
}

/**
 * Resolves `'painted'` once the page has painted a new frame (two animation frames), or `'hidden'` at
 * once when the page is hidden, or when it hides before those frames: a hidden page runs no animation
 * frames, and nothing the awaiting test does can show it. Checked and listened for in one task of the
 * page, so a change of visibility cannot fall between the look and the listener.
 */
export async function nextFrame(page: Page): Promise<'painted' | 'hidden'> {
  return page.evaluate(
    () =>
      new Promise<'painted' | 'hidden'>((resolve) => {
        if (document.visibilityState !== 'visible') {
          resolve('hidden');
          return;
        }
        const hidden = (): void => {
          if (document.visibilityState === 'visible') return;
          document.removeEventListener('visibilitychange', hidden);
          resolve('hidden');
        };
        document.addEventListener('visibilitychange', hidden);
        requestAnimationFrame(() =>
          requestAnimationFrame(() => {
            document.removeEventListener('visibilitychange', hidden);
            resolve('painted');
          }),
        );
      }),
  );
}

function isPage(target: Page | Locator): target is Page {
  return typeof (target as Page).mainFrame === 'function';
}
