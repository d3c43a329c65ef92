/**
 * The IPC channels between the Electron main process and the preload bridge. Both import them; main
 * ignores any other channel and any sender that is not its own window.
 */

/** A board method's channel (host/src/shared/board-methods.ts): one per call, and `exportRun`. */
export const channelOf = (method: string): string => `board:${method}`;

/** Run streams: start (stream id, {runId}), stop (stream id), ack (stream id, bytes handled: credit.ts). */
export const Stream = {
  start: 'run:stream',
  stop: 'run:stopStream',
  ack: 'run:ackStream',
} as const;

/** The system folder dialog, then a grant of the folder chosen there (no parameters). */
export const PICK_FOLDER = 'dialog:pickFolder';

/** Main → renderer messages (a prefix of their own: no method's channel can take their name). */
export const Push = {
  boardChanged: 'push:boardChanged',
  runStream: 'push:runStream',
} as const;

/** The app, its screenshots and live frames are served to the renderer from this origin. */
export const SCHEME = 'runboard';
export const APP_ORIGIN = `${SCHEME}://app`;
