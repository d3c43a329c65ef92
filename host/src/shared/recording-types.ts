/**
 * The board's view of the project's recordings (recordings/<id>/, made by `runboard record`): the
 * list, the one being recorded, the microphones to choose from. Pure data: shared by the host core and
 * the renderer.
 */

export interface RecordingItem {
  id: string;
  startedAt: string;
  /** Recording time, pauses left out; absent while it records (or when its recorder died). */
  durationMs?: number;
  /** Steps in its manifest (the person's events, grouped). */
  steps: number;
  /** Bytes of its folder (screenshots, manifest, video). */
  bytes: number;
  /** Screenshot names for a thumbnail strip (for recordingFile). */
  thumbnails: string[];
  /** Why it ended, in words ("stopped", a limit, the display went away). */
  message?: string;
  /** The card whose `recording:` is this one. */
  card?: { id: string; title: string };
  /** Has a screen video. */
  video: boolean;
}

export interface ActiveRecording {
  id: string;
  startedAt: string;
  /** The card made for it in Backlog (absent when config.yaml has no flow to give it). */
  cardId?: string;
  paused: boolean;
  /** Ctrl+I was pressed: the recording waits for an extract, details, or nothing (answerRecording). */
  asking: boolean;
  /** The microphone recorded, or null for none. */
  audio: string | null;
  warnings: string[];
}

/** How the last recording of this board ended (kept until the next one starts). */
export interface RecordingOutcome {
  id?: string;
  message: string;
  warnings: string[];
  failed: boolean;
}

export interface Microphone {
  /** What startRecording's `mic` takes: a PulseAudio/PipeWire source name. */
  name: string;
  /** A sink's monitor (what is played), not an input device. */
  monitor: boolean;
}

export interface RecordingsView {
  recordings: RecordingItem[];
  active: ActiveRecording | null;
  last: RecordingOutcome | null;
  microphones: Microphone[];
  /** Why no microphone is listed (no sound server), when none is. */
  microphoneError?: string;
  /** Why this board cannot record (no X display), when it cannot. */
  cannotRecord?: string;
}

export type ContextAnswer =
  | { kind: 'extract'; query: string; candidates?: string[] }
  | { kind: 'details'; note: string }
  | { kind: 'none' };
