/**
 * Debian's Chromium as the tests and benches start it, one command line for all: headless under
 * Playwright (tests/e2e/helpers/board.ts `launchBrowser`), on its own with DevTools
 * (tests/helpers/picture), or as a window on a test desktop whose tree AT-SPI reads
 * (tests/desktop/session.ts `spawnTestPage`, native/bench's desktop and heavy benches).
 * Free of imports: native/bench's bundles take it as it is.
 */

/**
 * What every Chromium of ours is started with: no sandbox (the suite runs as root), no GPU (Xvfb or
 * headless), and nothing it would do by itself on the side (first-run and default-browser screens, a
 * keyring, sync, component updates, background fetches, QUIC). Playwright adds most of these too;
 * a Chromium started by hand gets them only from here.
 */
export const CHROMIUM_FLAGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--no-default-browser-check',
  '--password-store=basic',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A Chromium window on a test desktop (`DISPLAY`), its web content on the accessibility bus. */
export interface ChromiumWindow {
  /** The profile's folder (a fresh one per browser: two at once cannot share it). */
  profile: string;
  /** The window's top left corner, x,y. */
  at: [number, number];
  /** The window's outer size, width × height. */
  size: [number, number];
  /** The page it opens (a `file://` URL). */
  url: string;
}

/**
 * The arguments after `chromium` for such a window, and what its environment adds: AT-SPI sees the
 * page's content only with both `ACCESSIBILITY_ENABLED=1` and `--force-renderer-accessibility`
 * (desktop-cli's NO_ACCESSIBILITY_TREE says so to a person).
 */
export function chromiumWindow(w: ChromiumWindow): { args: string[]; env: { ACCESSIBILITY_ENABLED: '1' } } {
  return {
    args: [
      ...CHROMIUM_FLAGS,
      `--user-data-dir=${w.profile}`,
      '--force-renderer-accessibility',
      `--window-position=${w.at.join(',')}`,
      `--window-size=${w.size.join(',')}`,
      w.url,
    ],
    env: { ACCESSIBILITY_ENABLED: '1' },
  };
}
