/**
 * A flow's `debug: true`: every model request and response of its runs, as the model proxy passes them
 * (model-proxy.ts), one JSON line each in the run's log folder (`model-debug.jsonl`): the rendered
 * request (prompt, tools, parameters) and the raw answer (the JSON body, or an event stream's text).
 * Images inside are shortened to their size (a screenshot per step would fill the disk). Before a line
 * is written every secret the supervisor knows for the run is replaced by `[redacted]`: the provider's
 * key, the run's proxy tokens and its sensitive parameter values (replay `secret` params). Headers are
 * not recorded (they carry the token). The file is the run's owner's only (0600).
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import type { RunAccount } from './proxy-usage.ts';

/** Of a request or an answer, this much at most is recorded (the rest is said to be cut). */
const MAX_BODY = 4 << 20;

/** Collects a body's bytes up to MAX_BODY as they pass. */
export class BodyTap {
  private parts: Buffer[] = [];
  private size = 0;
  cut = false;
  write(chunk: Buffer): void {
    if (this.size >= MAX_BODY) {
      this.cut = true;
      return;
    }
    this.parts.push(chunk);
    this.size += chunk.length;
  }
  text(): string {
    return Buffer.concat(this.parts).subarray(0, MAX_BODY).toString('utf8');
  }
}

/** base64 images (data URLs, Gemini inline data, Anthropic image sources) → `[image: N base64 chars]`. */
function shortenImages(text: string): string {
  return text
    .replace(/data:image\/[a-z+.-]+;base64,[A-Za-z0-9+/=]{200,}/g, (m) => `[image: ${m.length} base64 chars]`)
    .replace(
      /"(data|b64_json|image_url)":"[A-Za-z0-9+/=]{200,}"/g,
      (m, k: string) => `"${k}":"[image: ${m.length} base64 chars]"`,
    );
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text; // an event stream, or not JSON: as it came
  }
}

/** Replaces each secret (as it is, and as it would be escaped inside a JSON string) by `[redacted]`. */
export function redact(line: string, secrets: readonly string[]): string {
  let out = line;
  for (const s of secrets) {
    if (s.length < 4) continue; // a one-letter "secret" would shred the log and hide nothing
    for (const form of new Set([s, JSON.stringify(s).slice(1, -1)])) out = out.split(form).join('[redacted]');
  }
  return out;
}

export interface DebugExchange {
  provider: string;
  method: string;
  path: string;
  status: number;
  at: number;
  request: BodyTap | Buffer;
  response: BodyTap;
}

export class DebugLog {
  private out: WriteStream | undefined;

  constructor(
    private readonly file: string,
    /** The secrets of the run, read at each write (a key set later is redacted too). */
    private readonly secrets: () => string[],
  ) {}

  /** `known`: the secrets the proxy holds for this request (the key it sent, the token it was given). */
  write(x: DebugExchange, known: readonly string[]): void {
    const req = Buffer.isBuffer(x.request) ? x.request.toString('utf8') : x.request.text();
    const entry = {
      ts: new Date(x.at).toISOString(),
      ms: Math.round(performance.timeOrigin + performance.now() - x.at),
      provider: x.provider,
      method: x.method,
      path: x.path,
      status: x.status,
      request: parsed(shortenImages(req)),
      ...(!Buffer.isBuffer(x.request) && x.request.cut ? { requestCut: true } : {}),
      response: parsed(shortenImages(x.response.text())),
      ...(x.response.cut ? { responseCut: true } : {}),
    };
    this.out ??= createWriteStream(this.file, { flags: 'a', mode: 0o600 }).on('error', () => undefined);
    this.out.write(redact(JSON.stringify(entry), [...known, ...this.secrets()]) + '\n');
  }

  /** Ends the file; resolves once what was written is in it. */
  close(): Promise<void> {
    const out = this.out;
    if (!out) return Promise.resolve();
    return new Promise((resolve) => out.end(() => resolve()));
  }
}

/** What the proxy reads off a run's traffic: its tally and budget, and its debug log (flow `debug`). */
export interface ProxyTaps {
  account?: RunAccount;
  debug?: DebugLog;
}
