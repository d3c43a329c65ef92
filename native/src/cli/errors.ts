// desktop-cli's errors: one JSON object on stderr with a remediation line, and a distinct exit code
// per kind, so an agent can branch on the code without parsing words.

import { DesktopError } from '../desktop/types.ts';

export type CliErrorCode =
  | 'USAGE'
  | 'NO_DISPLAY'
  | 'NO_ACCESSIBILITY_BUS'
  | 'APP_NOT_FOUND'
  | 'NO_ACCESSIBILITY_TREE'
  | 'APP_NOT_RESPONDING'
  | 'ELEMENT_NOT_FOUND'
  | 'ELEMENT_AMBIGUOUS'
  | 'NO_READ_CONTEXT'
  | 'ACTION_FAILED'
  | 'CAPTURE_FAILED'
  | 'NOT_BUILT'
  | 'CLIPBOARD_UNAVAILABLE'
  | 'TIMEOUT'
  | 'ASSERTION_FAILED'
  | 'STEP_FAILED'
  | 'INTERNAL';

export const EXIT_CODES: Record<CliErrorCode, number> = {
  INTERNAL: 1,
  USAGE: 2,
  NO_DISPLAY: 3,
  NO_ACCESSIBILITY_BUS: 4,
  APP_NOT_FOUND: 5,
  NO_ACCESSIBILITY_TREE: 6,
  ELEMENT_NOT_FOUND: 7,
  ELEMENT_AMBIGUOUS: 8,
  NO_READ_CONTEXT: 9,
  ACTION_FAILED: 10,
  CAPTURE_FAILED: 11,
  NOT_BUILT: 12,
  CLIPBOARD_UNAVAILABLE: 13,
  APP_NOT_RESPONDING: 14,
  // As the public desktop-cli documents: a wait that timed out, an assert that failed and a batch
  // with a failed step exit 1 (their result is printed on stdout too), so `&&` chains stop there.
  TIMEOUT: 1,
  ASSERTION_FAILED: 1,
  STEP_FAILED: 1,
};

const REMEDIATION: Record<CliErrorCode, string> = {
  USAGE: 'Run `desktop-cli <command> --help` for the flags.',
  NO_DISPLAY:
    'Set DISPLAY to a running X server, or run inside a test desktop: scripts/desktop-session.sh run -- desktop-cli ...',
  NO_ACCESSIBILITY_BUS:
    'Start the AT-SPI bus: export DBUS_SESSION_BUS_ADDRESS, then run /usr/libexec/at-spi-bus-launcher --launch-immediately (scripts/desktop-session.sh does both).',
  APP_NOT_FOUND:
    'Run `desktop-cli list` to see the windows, then pass --app, --window, --window-id or --pid that match one.',
  NO_ACCESSIBILITY_TREE:
    'Start the app with accessibility on: GTK apps need NO_AT_BRIDGE unset; Chromium needs ACCESSIBILITY_ENABLED=1 and --force-renderer-accessibility.',
  APP_NOT_RESPONDING:
    'The app is stopped: continue it (kill -CONT <pid>), then retry. Input sent meanwhile (type, click by coordinates) waits in its queue.',
  ELEMENT_NOT_FOUND: 'The element is gone: run `desktop-cli read` again and use a fresh id.',
  ELEMENT_AMBIGUOUS:
    "Several elements match that id's role and title: run `desktop-cli read` again (narrow it with --window or --roles) and use a fresh id.",
  NO_READ_CONTEXT: 'Run `desktop-cli read` for that window first: element ids refer to its last read.',
  ACTION_FAILED: 'Check that the window still exists and accepts input (`desktop-cli list`), then retry.',
  CAPTURE_FAILED: 'Check the window is on screen (`desktop-cli list`) and the --scale/--format flags.',
  NOT_BUILT: 'Build the native addon: scripts/setup.sh (or node native/scripts/build.mjs).',
  CLIPBOARD_UNAVAILABLE:
    'Install xclip (apt-get install xclip): on X11 a clipboard that stays readable after desktop-cli exits needs a process that keeps owning the selection.',
  TIMEOUT: 'The condition did not hold in time: raise --timeout, or read the window to see what it shows.',
  ASSERTION_FAILED:
    'The element is not in the asserted state: read the window (desktop-cli read --format agent) to see its state.',
  STEP_FAILED:
    'A step of the batch failed: its error is in results; fix that step (or wrap it in try:) and run the batch again.',
  INTERNAL: 'This is a bug in desktop-cli; retry, and report the message if it persists.',
};

export class CliError extends Error {
  constructor(
    readonly code: CliErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** Any thrown value as the CLI's error: the addon's with its code mapped, anything else as INTERNAL. */
export function asCliError(e: unknown): CliError {
  if (e instanceof CliError) return e;
  if (e instanceof DesktopError) return new CliError(fromDesktopCode(e.code), e.message);
  return new CliError('INTERNAL', (e as Error)?.message ?? String(e));
}

/** Maps an addon error code (native/src/common/desktop_types.h) onto a CLI code. */
export function fromDesktopCode(code: string): CliErrorCode {
  switch (code) {
    case 'INVALID_ARGUMENT':
      return 'USAGE';
    case 'NO_DISPLAY':
    case 'NO_ACCESSIBILITY_BUS':
    case 'APP_NOT_FOUND':
    case 'NO_ACCESSIBILITY_TREE':
    case 'APP_NOT_RESPONDING':
    case 'ELEMENT_NOT_FOUND':
    case 'ACTION_FAILED':
    case 'CAPTURE_FAILED':
    case 'NOT_BUILT':
      return code;
    default:
      return 'INTERNAL';
  }
}

export function errorReport(err: CliError): string {
  return JSON.stringify({
    error: err.code,
    message: err.message,
    remediation: REMEDIATION[err.code],
    ...err.details,
  });
}
