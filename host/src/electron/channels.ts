/**
 * The one list of IPC channels between the Electron main process and the preload bridge. Both import
 * it; main ignores any other channel and any sender that is not its own window.
 */
export const Invoke = {
  board: 'board:get',
  card: 'card:get',
  move: 'card:move',
  cancel: 'card:cancel',
  answer: 'card:answer',
  settings: 'settings:get',
  saveSettings: 'settings:save',
  runFiles: 'run:files',
  runDiff: 'run:diff',
  settleWorktree: 'run:settleWorktree',
  exportRun: 'run:export',
  streamRun: 'run:stream',
  stopStream: 'run:stopStream',
  /** The renderer has handled n more bytes of a run stream (flow control: credit.ts). */
  ackStream: 'run:ackStream',
} as const;

export const Push = {
  boardChanged: 'board:changed',
  runStream: 'run:streamMessage',
} as const;

/** Screenshots and the app itself are served to the renderer from this scheme. */
export const SCHEME = 'runboard';
