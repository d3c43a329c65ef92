/**
 * The renderer's one door to the host: the calls of the board's method table (board-methods.ts) plus
 * what each shell carries its own way (push updates, run streams, image URLs, saving an export).
 * Implemented by the browser client (renderer/http-client.ts, for `runboard serve`) and the Electron
 * preload bridge (electron/preload.ts). No capabilities (no fs, no spawn) cross it.
 */
import type { BoardCalls } from './board-methods.ts';
import type { BoardDelta, ExtractStart, RunStreamMessage } from './board-types.ts';

export interface BoardApi extends BoardCalls {
  /**
   * Calls back whenever the board changes, with what changed (without a delta, e.g. after a
   * reconnect: fetch the whole board); returns an unsubscribe.
   */
  onBoardChanged(cb: (delta?: BoardDelta) => void): () => void;
  /** A URL the renderer may show as an image (a screenshot of the run). */
  fileUrl(runId: string, name: string): string;
  /** A URL the renderer may show as an image: a screenshot of a recording (its thumbnails). */
  recordingFileUrl(recordingId: string, name: string): string;
  /**
   * The live frame of a running computer-use run on a private display (404 before the first frame and
   * after the end); `n` makes each refresh a new URL.
   */
  liveUrl(runId: string, n: number): string;
  /**
   * Electron only: the system's folder dialog, then a grant of the folder the person chose there; the
   * granted folder, or undefined when they cancelled. The browser uses the host's folder browser.
   */
  pickFolder?(): Promise<string | undefined>;
  /**
   * Recording → task from a video the person chose on their computer (a File from the file chooser):
   * the browser uploads its bytes (`importVideo`, with `onProgress` as they go), Electron hands over its
   * path (`extractTask` with `file`: it must lie in a granted folder).
   */
  importVideoFile(
    file: File,
    opts: { card?: string; flow?: string },
    onProgress?: (sent: number, total: number) => void,
  ): Promise<ExtractStart>;
  /** Saves (downloads) the run dir as one .tar.gz. */
  exportRun(runId: string): Promise<void>;
  /** Streams a run's output (the tail of it first) and events until it ends; returns a stop. */
  streamRun(runId: string, cb: (m: RunStreamMessage) => void): () => void;
}
