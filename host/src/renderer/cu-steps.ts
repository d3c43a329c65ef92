/**
 * A computer-use run's steps, from its events: the worker logs `cu-screenshot` (step 0), one `cu-step`
 * per tool call (several calls of one model turn share a step and its screenshot) and `cu-final`, as
 * the protocol declares them (CuScreenshot, CuStep, CuFinal in supervisor/src/protocol/cu-events.ts).
 * Pure: the inspector's filmstrip renders what this folds. Records from older runs may lack fields,
 * so each one is still checked before use.
 */
import type { CuEvent, CuFinal, CuScreenshot, CuStep, RunEvent } from '@runboard/supervisor/protocol/data';

/** An event's data as the protocol declares it, every field possibly missing (older records). */
type Recorded<T> = { [K in keyof T]?: unknown };

export interface FilmCall {
  tool: string;
  action: string;
  /** The arguments in short (`x=120 y=48`, `text="hello"`). */
  args: string;
  /** Why the call could not be carried out (invalid call, failed action). */
  error?: string;
}

export interface FilmStep {
  step: number;
  calls: FilmCall[];
  /** The run-relative path of the screenshot sent after this step (step 0: the first one). */
  screenshot?: string;
  /** The image size sent to the model. */
  image?: [number, number];
  timings: { modelMs?: number; actMs?: number; captureMs?: number; buildMs?: number };
  tokens?: { input: number; output: number };
  /** The model's text with the calls (its reasoning, when it gave any). */
  modelText?: string;
  /** The last step: the model's completion JSON (its status and summary when valid). */
  final?: { valid: boolean; status?: string; summary?: string; text: string };
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** `{action: 'left_click', x: 10, y: 20}` → `x=10 y=20` (the action is shown apart), cut at `max`. */
export function shortArgs(args: unknown, max = 80): string {
  let s: string;
  if (args === null || args === undefined) s = '';
  else if (typeof args !== 'object') s = String(args);
  else
    s = Object.entries(args as Record<string, unknown>)
      .filter(([k]) => k !== 'action')
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(' ');
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** Folds a run's events (any order of arrival, duplicates ignored by step/seq) into its steps. */
export function filmstripOf(events: readonly RunEvent[]): FilmStep[] {
  const steps = new Map<number, FilmStep>();
  const seen = new Set<number>();
  const at = (n: number): FilmStep => {
    let s = steps.get(n);
    if (!s) steps.set(n, (s = { step: n, calls: [], timings: {} }));
    return s;
  };
  for (const e of events) {
    if (e.type !== 'log' || !e.data || seen.has(e.seq)) continue;
    const kind = (e.data as { kind?: unknown }).kind as CuEvent['kind'] | undefined;
    const step = num((e.data as { step?: unknown }).step);
    if (step === undefined) continue;
    seen.add(e.seq);
    if (kind === 'cu-screenshot') {
      const d = e.data as Recorded<CuScreenshot>;
      const s = at(step);
      s.screenshot = `artifacts/${str(d.file) ?? ''}`;
      const w = num(d.width);
      const h = num(d.height);
      if (w && h) s.image = [w, h];
      s.timings.captureMs = num(d.captureMs);
    } else if (kind === 'cu-step') {
      const d = e.data as Recorded<CuStep>;
      const s = at(step);
      const tool = str(d.tool) ?? '?';
      s.calls.push({
        tool,
        action: str(d.action) ?? tool,
        args: shortArgs(d.args),
        ...(str(d.error) ? { error: str(d.error)! } : {}),
      });
      if (str(d.screenshot)) s.screenshot = `artifacts/${str(d.screenshot)!}`;
      const t = (d.timings ?? {}) as Record<string, unknown>;
      s.timings = {
        modelMs: num(t.modelMs),
        actMs: num(t.actMs) ?? num(t.toolMs),
        captureMs: num(t.captureMs),
        buildMs: num(t.buildMs),
      };
      const img = t.image;
      if (Array.isArray(img) && img.length === 2) s.image = [Number(img[0]), Number(img[1])];
      const tok = d.tokens as { input?: unknown; output?: unknown } | undefined;
      if (tok && num(tok.input) !== undefined)
        s.tokens = { input: num(tok.input)!, output: num(tok.output) ?? 0 };
      if (str(d.modelText)) s.modelText = str(d.modelText);
    } else if (kind === 'cu-final') {
      const d = e.data as Recorded<CuFinal>;
      const s = at(step);
      const text = str(d.text) ?? '';
      let status: string | undefined;
      let summary: string | undefined;
      if (d.valid === true) {
        try {
          const j = JSON.parse(text.replace(/^```(?:json)?\s*|\s*```$/g, '')) as Record<string, unknown>;
          status = str(j.status);
          summary = str(j.summary);
        } catch {
          // shown as text
        }
      }
      s.final = {
        valid: d.valid === true,
        text,
        ...(status ? { status } : {}),
        ...(summary ? { summary } : {}),
      };
      const t = (d.timings ?? {}) as Record<string, unknown>;
      s.timings = { modelMs: num(t.modelMs) };
      const tok = d.tokens as { input?: unknown; output?: unknown } | undefined;
      if (tok && num(tok.input) !== undefined)
        s.tokens = { input: num(tok.input)!, output: num(tok.output) ?? 0 };
    }
  }
  return [...steps.values()].sort((a, b) => a.step - b.step);
}

/** True when an event is one the filmstrip uses (the inspector keeps only these). */
export function isFilmEvent(e: RunEvent): boolean {
  if (e.type !== 'log' || !e.data) return false;
  const k = (e.data as { kind?: unknown }).kind;
  const film: readonly CuEvent['kind'][] = ['cu-screenshot', 'cu-step', 'cu-final', 'cu-live'];
  return film.includes(k as CuEvent['kind']);
}
