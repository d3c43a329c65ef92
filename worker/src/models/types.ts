/**
 * The shapes of the model stack (worker/src/models): a one-shot request with text and images
 * (extraction, reflection) and a conversation with tools (the computer-use loop, replay's predict), the
 * same for every wire format. A module of its own so that the format files and the client import them
 * without importing each other.
 */
import type { WorkerSpec } from '@runboard/supervisor/protocol';

/** The wire formats of a one-shot call. */
export type CallApi = 'responses' | 'chat' | 'messages' | 'gemini';
/** The wire formats of a conversation with tools. */
export type Api = 'responses' | 'chat' | 'messages';

export interface Image {
  data: Buffer;
  mime: 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp';
  /** Text sent just before the image (e.g. its time in the video). */
  caption?: string;
}

export interface CallInput {
  /** The prompt (none when empty: the text may all come after the media), then images, then more text. */
  prompt: string;
  images?: Image[];
  /**
   * A whole video sent inline, where the images go (Chat Completions' `video_url` content, which GLM
   * reads: protocol/vision.ts visionTakesVideo); the other formats take frames, or a Gemini file.
   */
  video?: { mime: string; data: Buffer };
  /** Text after the images (e.g. an event list). */
  after?: string;
  /** A Gemini file (uploadVideo) to put before the prompt. */
  file?: { uri: string; mimeType: string };
}

export interface CallOptions {
  model: string;
  maxOutputTokens: number;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

export interface CallResult {
  text: string;
  usage: { input: number; output: number };
  /** Size of the request body's JSON, bytes (what the benchmark counts). */
  requestBytes: number;
}

export type ModelSpec = NonNullable<WorkerSpec['model']>;

// ─── A conversation with tools ──────────────────────────────────────────────────────────────────

/** A screenshot as a conversation sends it (the desktop's Shot is one). */
export interface Picture {
  data: Buffer;
  mime: 'image/jpeg';
  width: number;
  height: number;
}

export interface Usage {
  input: number;
  output: number;
}

export interface ToolCall {
  id: string;
  /** The loop's tool (the Anthropic `computer` tool is translated to `desktop_action`). */
  name: string;
  args: unknown;
  /** Set when the arguments were not valid JSON. */
  parseError?: string;
  raw: string;
}

export interface ModelTurn {
  text: string;
  calls: ToolCall[];
  usage: Usage;
}

export interface ToolReply {
  call: ToolCall;
  output: Record<string, unknown>;
}

/** A tool as offered to a model: its name, what the model is told about it, its arguments' JSON Schema. */
export interface OfferedTool {
  name: string;
  description: string;
  schema: Record<string, unknown>;
}

export interface ProviderOptions {
  baseUrl: string;
  token: string;
  model: string;
  /** The tools offered, with what the model is told about each (prompt folder config). */
  tools: OfferedTool[];
  maxOutputTokens: number;
  timeoutMs: number;
}

/** A conversation with tools over one wire format: each turn sends it whole (stateless). */
export interface Provider {
  readonly api: Api;
  begin(prompt: string, shot: Picture, caption: string): void;
  /** One model request with the conversation so far; the answer joins the conversation. */
  send(signal: AbortSignal): Promise<ModelTurn>;
  /** Tool results of the last turn, and the fresh screenshot (null: the screen is unchanged). */
  reply(results: ToolReply[], shot: Picture | null, caption: string): void;
  /** Size of the last request body's JSON (for the benchmark and the step events). */
  lastRequestBytes: number;
}
