/**
 * The SDK clients of the model stack, made in one place: every request goes through the supervisor's
 * proxy (`baseUrl`) with the run's proxy token as the SDK's key (the real key never reaches the run),
 * no SDK retries (the callers' retry policy is retry.ts), and the caller's timeout.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

/** Where a run's model requests go: the proxy's base URL and the run's token for it. */
export interface Endpoint {
  baseUrl: string;
  token: string;
}

const options = (e: Endpoint, timeoutMs: number) => ({
  apiKey: e.token,
  baseURL: e.baseUrl,
  maxRetries: 0,
  timeout: timeoutMs,
});

/** OpenAI's SDK: Responses, and Chat Completions (any OpenAI-compatible server). */
export const openaiSdk = (e: Endpoint, timeoutMs: number): OpenAI => new OpenAI(options(e, timeoutMs));

/** Anthropic's SDK: Messages (never a bearer token from the environment beside the run's token). */
export const anthropicSdk = (e: Endpoint, timeoutMs: number): Anthropic =>
  new Anthropic({ ...options(e, timeoutMs), authToken: null });

/** A tool call's arguments as the model wrote them (JSON text), parsed; parseError when they are not JSON. */
export function parseArgs(raw: string): { args: unknown; parseError?: string } {
  try {
    return { args: JSON.parse(raw || '{}') };
  } catch (err) {
    return { args: null, parseError: (err as Error).message };
  }
}

export const json = (o: unknown): string => JSON.stringify(o);

/** An image as a data: URL (the OpenAI formats' inline image). */
export const dataUrl = (im: { mime: string; data: Buffer }): string =>
  `data:${im.mime};base64,${im.data.toString('base64')}`;
