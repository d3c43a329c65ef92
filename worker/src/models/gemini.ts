/**
 * Gemini through its official SDK (@google/genai) and the supervisor's proxy: a one-shot
 * generateContent with text and images (generate), and the Files API sequence for a video (seed 000:
 * upload, poll until ACTIVE, then name it in generateContent). The SDK's key is the run's proxy token;
 * the proxy adds the real key (x-goog-api-key). No conversation with tools: the desktop runners' wire
 * formats are the other three (computerUse.api).
 */
import { FileState, GoogleGenAI, type Part } from '@google/genai';
import type { Endpoint } from './sdk.ts';
import type { CallInput, CallOptions, CallResult } from './types.ts';

export class GeminiClient {
  private readonly ai: GoogleGenAI;

  constructor(to: Endpoint, timeoutMs: number) {
    this.ai = new GoogleGenAI({
      apiKey: to.token,
      httpOptions: { baseUrl: to.baseUrl, timeout: timeoutMs },
    });
  }

  /** Uploads a video (resumable), then polls files.get until it is ACTIVE; FAILED or too slow throws. */
  async uploadVideo(
    file: string,
    mimeType: string,
    o: { pollMs: number; activeTimeoutMs: number; signal?: AbortSignal | undefined },
    onState?: (state: string, polls: number) => void,
  ): Promise<{ name: string; uri: string; mimeType: string; sizeBytes: number; polls: number }> {
    const up = await this.ai.files.upload({ file, config: { mimeType, abortSignal: o.signal } });
    const name = up.name;
    if (!name) throw new Error('the Files API answered the upload without a file name');
    let f = up;
    let polls = 0;
    const deadline = Date.now() + o.activeTimeoutMs;
    while (f.state !== FileState.ACTIVE) {
      onState?.(String(f.state ?? 'unknown'), polls);
      if (f.state === FileState.FAILED)
        throw new Error(`the uploaded video could not be processed: ${f.error?.message ?? 'state FAILED'}`);
      if (Date.now() > deadline)
        throw new Error(
          `the uploaded video was not ACTIVE after ${Math.round(o.activeTimeoutMs / 1000)} s (state ${f.state})`,
        );
      await sleep(o.pollMs, o.signal);
      f = await this.ai.files.get({ name, config: { abortSignal: o.signal } });
      polls++;
    }
    if (!f.uri) throw new Error('the ACTIVE file has no uri');
    return {
      name,
      uri: f.uri,
      mimeType: f.mimeType ?? mimeType,
      sizeBytes: Number(f.sizeBytes ?? 0),
      polls,
    };
  }

  async deleteFile(name: string): Promise<void> {
    await this.ai.files.delete({ name });
  }

  async generate(input: CallInput, o: CallOptions): Promise<CallResult> {
    const parts: Part[] = [];
    if (input.file) parts.push({ fileData: { fileUri: input.file.uri, mimeType: input.file.mimeType } });
    if (input.video) throw new Error('Gemini takes a video as a file (uploadVideo), not inline');
    if (input.prompt) parts.push({ text: input.prompt });
    for (const im of input.images ?? []) {
      if (im.caption) parts.push({ text: im.caption });
      parts.push({ inlineData: { data: im.data.toString('base64'), mimeType: im.mime } });
    }
    if (input.after) parts.push({ text: input.after });
    const contents = [{ role: 'user', parts }];
    const requestBytes = Buffer.byteLength(
      JSON.stringify({ contents, generationConfig: { maxOutputTokens: o.maxOutputTokens } }),
    );
    const r = await this.ai.models.generateContent({
      model: o.model,
      contents,
      config: { maxOutputTokens: o.maxOutputTokens, abortSignal: o.signal },
    });
    return {
      text: r.text ?? '',
      usage: {
        input: r.usageMetadata?.promptTokenCount ?? 0,
        output: r.usageMetadata?.candidatesTokenCount ?? 0,
      },
      requestBytes,
    };
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('cancelled'));
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(new Error('cancelled'));
      },
      { once: true },
    );
  });
}
