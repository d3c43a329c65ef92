/**
 * A run's model debug log for the inspector (a flow's `debug: true`; the supervisor writes it:
 * supervisor/src/node/proxy-debug.ts): a page of entries read from a byte offset, never the whole file
 * (a long run has thousands, each up to a few MiB). Only runs of this board's own project are read
 * (their card lies in its folder), through the run id checked as every run method checks it, and the
 * file is opened as a regular file inside the run's folder, never through a link. Each entry is shown
 * as its status, model, tokens, the rendered request, the raw answer and the answer's text, each
 * shortened for the page; images are already their size (the supervisor wrote them so).
 */
import path from 'node:path';
import { foldUsage, MODEL_DEBUG_FILE, type AnswerUsage, type RunResult } from '@runboard/supervisor/protocol';
import type { DebugEntryView, DebugLogPage } from '../shared/debug-log-types.ts';
import { Invalid, NotFound } from './board-errors.ts';
import { openRegularFile } from './regular-file.ts';

/** Entries in a page by default, and at most. */
export const DEBUG_PAGE = 20;
const DEBUG_PAGE_MAX = 100;
/** Each of an entry's texts is cut here for the page. */
const SHOWN = 16 << 10;
/** Bytes read at a time. */
const CHUNK = 256 << 10;
/** A line longer than this is not parsed (the supervisor's are ≤ 2 × 4 MiB before escaping). */
const MAX_LINE = 32 << 20;

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** `[image: N base64 chars]` (how the supervisor writes an image) → its size in KB. */
const sized = (text: string): string =>
  text.replace(
    /\[image: (\d+) base64 chars\]/g,
    (_, n: string) => `[image: ${Math.max(1, Math.round((Number(n) * 3) / 4 / 1024))} KB]`,
  );

const cut = (text: string): [string, boolean] =>
  text.length > SHOWN
    ? [`${text.slice(0, SHOWN)}\n… (${text.length - SHOWN} more characters)`, true]
    : [text, false];

const pretty = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));

/** The text (and tool calls) of one answer or streamed event, in any of the four wire formats. */
function textOf(o: Obj | undefined, out: string[]): void {
  if (!o) return;
  // streamed: Responses' text deltas, Anthropic's content_block_delta, Chat's choices[].delta
  if (o.type === 'response.output_text.delta') return void out.push(str(o.delta));
  const delta = obj(o.delta);
  if (o.type === 'content_block_delta' && delta)
    return void out.push(str(delta.text) || str(delta.partial_json));
  if (o.type === 'content_block_start') {
    const b = obj(o.content_block);
    if (b?.type === 'tool_use') out.push(`\n→ ${str(b.name)} `);
    return;
  }
  for (const c of Array.isArray(o.choices) ? o.choices : []) {
    const m = obj(obj(c)?.delta) ?? obj(obj(c)?.message);
    if (!m) continue;
    out.push(str(m.content));
    for (const t of Array.isArray(m.tool_calls) ? m.tool_calls : []) {
      const f = obj(obj(t)?.function);
      if (f) out.push(`${f.name ? `\n→ ${str(f.name)} ` : ''}${str(f.arguments)}`);
    }
  }
  // whole answers: Responses' output items, Anthropic's content blocks, Gemini's candidates' parts
  for (const item of Array.isArray(o.output) ? o.output : []) {
    const it = obj(item);
    if (it?.type === 'function_call' || it?.type === 'computer_call')
      out.push(`\n→ ${str(it.name) || str(it.type)} ${str(it.arguments) || JSON.stringify(it.action ?? {})}`);
    for (const c of Array.isArray(it?.content) ? it.content : []) out.push(str(obj(c)?.text));
  }
  if (!o.type || o.type === 'message')
    for (const c of Array.isArray(o.content) ? o.content : []) {
      const b = obj(c);
      if (b?.type === 'text') out.push(str(b.text));
      if (b?.type === 'tool_use') out.push(`\n→ ${str(b.name)} ${JSON.stringify(b.input ?? {})}`);
    }
  for (const cand of Array.isArray(o.candidates) ? o.candidates : [])
    for (const p of (obj(obj(cand)?.content)?.parts as unknown[] | undefined) ?? []) {
      const part = obj(p);
      out.push(str(part?.text));
      const fc = obj(part?.functionCall);
      if (fc) out.push(`\n→ ${str(fc.name)} ${JSON.stringify(fc.args ?? {})}`);
    }
}

/** The answer's events (an event stream's `data:` lines), or the JSON answer as one. */
function eventsOf(response: unknown): unknown[] {
  if (typeof response !== 'string') return Array.isArray(response) ? response : [response];
  const out: unknown[] = [];
  for (const line of response.split('\n')) {
    const l = line.trimEnd();
    if (!l.startsWith('data:')) continue;
    try {
      out.push(JSON.parse(l.slice(5)));
    } catch {
      // [DONE]
    }
  }
  return out;
}

/** One line of the log as the inspector shows it. */
export function entryView(line: string, n: number): DebugEntryView {
  let e: Obj;
  try {
    e = obj(JSON.parse(line)) ?? {};
  } catch {
    e = {};
  }
  const usage: AnswerUsage = {};
  const text: string[] = [];
  for (const ev of eventsOf(e.response)) {
    foldUsage(usage, ev);
    textOf(obj(ev), text);
  }
  const [request, c1] = cut(sized(pretty(e.request ?? '')));
  const [response, c2] = cut(sized(pretty(e.response ?? '')));
  const [answer, c3] = cut(text.join('').trim());
  const model = str(obj(e.request)?.model) || usage.model || null;
  return {
    n,
    ts: str(e.ts),
    ms: typeof e.ms === 'number' ? e.ms : null,
    provider: str(e.provider),
    method: str(e.method),
    path: str(e.path),
    status: typeof e.status === 'number' ? e.status : 0,
    model,
    tokens:
      usage.input === undefined && usage.output === undefined
        ? null
        : { input: usage.input ?? null, output: usage.output ?? null },
    request,
    response,
    text: answer,
    cut: c1 || c2 || c3 || e.requestCut === true || e.responseCut === true,
  };
}

/** A page of the debug log at `file`, from `offset` (the start of an entry), `index` entries before it. */
export async function readDebugPage(
  file: string,
  within: string,
  p: { offset: number; index: number; limit: number },
): Promise<DebugLogPage> {
  let opened: Awaited<ReturnType<typeof openRegularFile>>;
  try {
    opened = await openRegularFile(file, { noFollow: true, within });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || /no such file/i.test((err as Error).message))
      return { exists: false, entries: [], offset: 0, next: null, size: 0 };
    throw new NotFound(`the run's debug log cannot be read: ${(err as Error).message}`);
  }
  const { handle, st } = opened;
  try {
    const size = st.size;
    if (p.offset > size)
      throw new Invalid(`offset ${p.offset} lies past the debug log's end (${size} bytes)`);
    if (p.offset > 0) {
      const before = Buffer.alloc(1);
      await handle.read(before, 0, 1, p.offset - 1);
      if (before[0] !== 0x0a)
        throw new Invalid(`offset ${p.offset} is not the start of an entry of the debug log`);
    }
    const entries: DebugEntryView[] = [];
    let pos = p.offset;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let skipping = false;
    const buf = Buffer.alloc(CHUNK);
    while (entries.length < p.limit && pos < size) {
      const { bytesRead } = await handle.read(buf, 0, Math.min(CHUNK, size - pos), pos);
      if (!bytesRead) break;
      let start = 0;
      for (;;) {
        const nl = buf.indexOf(0x0a, start);
        if (nl < 0 || nl >= bytesRead) break;
        const part = buf.subarray(start, nl);
        const n = p.index + entries.length + 1;
        if (skipping) entries.push(tooLong(n));
        else entries.push(entryView(Buffer.concat([...pending, part]).toString('utf8'), n));
        pending = [];
        pendingBytes = 0;
        skipping = false;
        start = nl + 1;
        if (entries.length >= p.limit) break;
      }
      if (entries.length >= p.limit) {
        pos += start;
        break;
      }
      const rest = buf.subarray(start, bytesRead);
      pendingBytes += rest.length;
      if (pendingBytes > MAX_LINE) {
        skipping = true;
        pending = [];
      } else if (!skipping) pending.push(Buffer.from(rest));
      pos += bytesRead;
    }
    // an unfinished last line (the run is writing it) is left for the next page
    if (pendingBytes) pos -= pendingBytes;
    return { exists: true, entries, offset: p.offset, next: pos < size ? pos : null, size };
  } finally {
    await handle.close();
  }
}

function tooLong(n: number): DebugEntryView {
  return {
    ...entryView('{}', n),
    request: `(an entry longer than ${MAX_LINE >> 20} MiB: not shown; the file is model-debug.jsonl in the run's folder)`,
    cut: true,
  };
}

/**
 * The debug log of a run of this board's project: `run` is asked of the supervisor (the id checked
 * there), and a run whose card lies outside the project's folder is not this board's to show.
 */
export async function debugLogPage(
  run: RunResult,
  projectDir: string,
  p: { offset?: string | undefined; index?: string | undefined; limit?: string | undefined },
): Promise<DebugLogPage> {
  const rel = path.relative(projectDir, run.card.path);
  if (!rel || rel.startsWith('..') || path.isAbsolute(rel))
    throw new NotFound(`no run ${run.runId} of this board's project`);
  const num = (v: string | undefined, name: string, fallback: number, max: number): number => {
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!/^\d{1,15}$/.test(v) || n > max)
      throw new Invalid(`${name} must be a whole number from 0 to ${max}`);
    return n;
  };
  const limit = num(p.limit, 'limit', DEBUG_PAGE, DEBUG_PAGE_MAX) || DEBUG_PAGE;
  return readDebugPage(path.join(run.logDir, MODEL_DEBUG_FILE), run.logDir, {
    offset: num(p.offset, 'offset', 0, Number.MAX_SAFE_INTEGER),
    index: num(p.index, 'index', 0, Number.MAX_SAFE_INTEGER),
    limit,
  });
}
