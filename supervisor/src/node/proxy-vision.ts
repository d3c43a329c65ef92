/**
 * A run's vision route (model-proxy.ts, grantVision): the one request a vision token may make, its
 * body read (bounded) and checked, and forwarded as parsed.
 */
import type http from 'node:http';

export /** The one request a vision token may make. */
interface VisionLimit {
  model: string;
  /** Path below the provider, as the request line has it (no query). */
  path: string;
  /** The model is named in the JSON body (else in the path: Gemini). */
  modelInBody: boolean;
}

/** Largest vision request body (a 10 MB image is ~13.4 MB as base64; a GLM video up to 20 MB ~27 MB). */
export const VISION_MAX_BODY = 32 * 1024 * 1024;

/** Why a vision token's request is not the one it may make (null: it is). */
export function visionRefusal(
  limit: VisionLimit,
  method: string | undefined,
  path: string,
  query: string,
): string | null {
  if (method === 'POST' && path === limit.path && !query) return null;
  return `this run's vision route makes only the vision request (POST ${limit.path}, model ${limit.model}), not ${method} ${path}${query}`;
}

/** The body a vision request is forwarded with (as parsed, so upstream reads what was checked), or why not. */
export function visionBody(limit: VisionLimit, body: Buffer): Buffer | string {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return "this run's vision route takes one JSON object";
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    return "this run's vision route takes one JSON object";
  const model = (json as { model?: unknown }).model;
  if (limit.modelInBody ? model !== limit.model : model !== undefined)
    return `this run's vision route asks model ${limit.model} only (the request named ${JSON.stringify(model)})`;
  return Buffer.from(JSON.stringify(json));
}

/** The request's body, up to `max` bytes (more: an error saying so). */
export function readBody(req: http.IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        // the rest is read and dropped, so the answer (413) still reaches the client
        req.removeAllListeners('data');
        req.resume();
        reject(new Error(`a vision request may have at most ${max} bytes`));
      } else parts.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}
