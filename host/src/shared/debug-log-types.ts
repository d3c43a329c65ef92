/**
 * A page of a run's model debug log (a flow's `debug: true`: `model-debug.jsonl` in the run's log
 * folder, one model request and its answer per line) as the inspector shows it (host/src/core/debug-log.ts
 * reads it; host/src/renderer/DebugLog.tsx shows it). A page is read from a byte offset of the file and
 * never the whole file: a long run has thousands of entries. Pure types.
 */

/** One model request and its answer. */
export interface DebugEntryView {
  /** Its number in the log (1-based). */
  n: number;
  ts: string;
  /** From the request to the answer's end. */
  ms: number | null;
  provider: string;
  method: string;
  path: string;
  status: number;
  /** The model named in the request or the answer. */
  model: string | null;
  /** The answer's usage, as the provider reported it (null: it said none). */
  tokens: { input: number | null; output: number | null } | null;
  /** The rendered request (its prompt, tools, parameters) as JSON text, images as their size. */
  request: string;
  /** The answer as it came (JSON, or an event stream's text), images as their size. */
  response: string;
  /** The text the model answered (the event stream's text deltas put together, or the JSON's text). */
  text: string;
  /** Shortened here, or already by the supervisor (a body past 4 MiB). */
  cut: boolean;
}

export interface DebugLogPage {
  /** Whether the run's flow recorded a debug log (`debug: true`) at all. */
  exists: boolean;
  entries: DebugEntryView[];
  /** The byte offset of this page and of the next (null: the end of the file as it is now). */
  offset: number;
  next: number | null;
  /** The file's size now, bytes. */
  size: number;
}
