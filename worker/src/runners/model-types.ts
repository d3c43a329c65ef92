/**
 * The shapes of one model request (model-call.ts) shared by its clients (gemini-client.ts): a module of
 * their own so that the clients and model-call.ts import them without importing each other.
 */
import type { WorkerSpec } from '@runboard/supervisor/protocol';

export type CallApi = 'responses' | 'chat' | 'messages' | 'gemini';

export interface Image {
  data: Buffer;
  mime: 'image/jpeg' | 'image/png';
  /** Text sent just before the image (e.g. its time in the video). */
  caption?: string;
}

export interface CallInput {
  /** The prompt, then (optionally) images, then more text. */
  prompt: string;
  images?: Image[];
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
