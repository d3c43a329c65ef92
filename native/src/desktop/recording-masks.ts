// What the recorder (recording.ts) keeps out of its screenshots and video: every password field it has
// seen, and every field the person said holds a secret when the recording began (`secretFields`, by
// accessible name), per window, in every window on screen at a screenshot's instant (decision 136:
// recording-screen.ts says which windows those are and reads the ones not read yet). A field's reported
// bounds change with its content: every rectangle seen is kept, a stale one only masks more.
import { existsSync, rmSync, statSync } from 'node:fs';
import { secrets } from './recording-elements.ts';
import type { Element, ReadResult, Rect, WindowInfo } from './types.ts';
import { maskVideo, type VideoResult } from './video.ts';

/** What the desktop said about the window an event went to (a step's read). */
export interface Lookup {
  tree?: ReadResult;
  window?: WindowInfo;
  /** Why the tree could not be read (when it could not). */
  error?: string;
}

/** What the secret test looks at: an element of a read, or a focus change. */
export type SecretProbe = Pick<Element, 'secret' | 'editable' | 'name'>;

/** A field's name as `secretFields` compares it: trimmed, case and inner spacing ignored. */
export function fieldKey(name: string): string {
  return name.trim().replace(/\s+/g, ' ').toLowerCase();
}

/**
 * The test for a secret field: a password field, or an editable one whose accessible name is in
 * `names` (a PIN typed into a plain field the person named when starting the recording).
 */
export function secretTest(names: readonly string[] = []): (e: SecretProbe) => boolean {
  const keys = new Set(names.map(fieldKey).filter((k) => k !== ''));
  if (keys.size === 0) return (e) => e.secret;
  return (e) => e.secret || (e.editable && keys.has(fieldKey(e.name)));
}

/** A window's secret fields as the reads found them. */
interface KnownWindow {
  /** Each field's rectangle relative to the window's top-left corner at the read that found it. */
  fields: Map<string, Rect>;
  /** Where the window's top-left corner was at the last screenshot that masked it. */
  at?: [number, number];
}

export class SecretFields {
  /** window id → its secret fields. */
  private readonly known = new Map<number, KnownWindow>();
  /** Every rectangle (screen coordinates) a screenshot masked: the video's masks. */
  private readonly masked = new Map<string, Rect>();
  readonly isSecret: (e: SecretProbe) => boolean;

  constructor(names: readonly string[] = []) {
    this.isSecret = secretTest(names);
  }

  /**
   * Rectangles to mask for a screenshot: the secret fields of every window in `screen` (the windows on
   * screen at its instant, decision 136) and of the windows the reads went to, each where its window is
   * now (a field is kept relative to its window, so a moved window's fields move with it; a window that
   * moved since the last screenshot is masked at both places, since the screenshot may be from before
   * the move). Every read in `lookups` is learnt first. A window known before but not in `screen` has
   * closed: it is masked where it was last this once (the screenshot may be from before it closed), then
   * forgotten (X reuses window ids). Without `screen` (the windows could not be listed), every known
   * window is masked where it was last.
   */
  masksFor(lookups: Lookup[], screen?: WindowInfo[]): Rect[] {
    for (const l of lookups) if (l.tree) this.learn(l.tree);
    const where = new Map<number, Rect>();
    for (const w of screen ?? []) if (!where.has(w.id)) where.set(w.id, w.bounds);
    for (const l of lookups) {
      const w = l.window ?? l.tree?.window;
      if (w && !where.has(w.id)) where.set(w.id, w.bounds);
    }
    const out = new Map<string, Rect>();
    for (const [id, k] of this.known) {
      const b = where.get(id);
      const origins: [number, number][] = [];
      if (b) origins.push([b[0], b[1]]);
      if (k.at && (!b || k.at[0] !== b[0] || k.at[1] !== b[1])) origins.push(k.at);
      if (b) k.at = [b[0], b[1]];
      else if (screen) this.known.delete(id);
      for (const [ox, oy] of origins)
        for (const [x, y, w, h] of k.fields.values()) {
          const r: Rect = [x + ox, y + oy, w, h];
          out.set(r.join(','), r);
        }
    }
    for (const [key, r] of out) this.masked.set(key, r);
    return [...out.values()];
  }

  /** A read's secret fields, relative to its window (every rectangle seen is kept: a stale one only masks more). */
  private learn(tree: ReadResult): void {
    const [ox, oy] = tree.window.bounds;
    const k = this.known.get(tree.window.id) ?? { fields: new Map<string, Rect>() };
    for (const [x, y, w, h] of secrets(tree.elements, this.isSecret)) {
      const r: Rect = [x - ox, y - oy, w, h];
      k.fields.set(r.join(','), r);
    }
    this.known.set(tree.window.id, k);
  }

  /** Whether a secret field was seen in any of these windows (now or before). */
  near(lookups: Lookup[]): boolean {
    const ids = lookups.map((l) => l.window?.id ?? l.tree?.window.id).filter((id) => id !== undefined);
    return (
      ids.some((id) => (this.known.get(id)?.fields.size ?? 0) > 0) ||
      lookups.some((l) => l.tree !== undefined && secrets(l.tree.elements, this.isSecret).length > 0)
    );
  }

  /** Every rectangle a screenshot masked, in every window, wherever it was. */
  all(): Rect[] {
    return [...this.masked.values()];
  }

  /**
   * Every secret field a screenshot masked, wherever it was, is covered in the video for its whole
   * length (it is only known from the accessibility reads at the steps, so it is masked before and
   * after too). A video that cannot be masked is removed; `warn` says so.
   */
  async maskVideo(v: VideoResult, origin: Rect, warn: (m: string) => void): Promise<VideoResult> {
    const [ox, oy] = origin;
    const rects = this.all();
    if (rects.length === 0 || !existsSync(v.file)) return v;
    const error = await maskVideo(
      v.file,
      rects.map(([x, y, w, h]): Rect => [x - ox, y - oy, w, h]),
    );
    if (!error) return { ...v, bytes: statSync(v.file).size, masked: rects.length };
    rmSync(v.file, { force: true });
    warn(`the screen video showed a password field and could not be masked (${error}): it was removed`);
    return { ...v, bytes: 0, complete: false, error: 'removed: its password fields could not be masked' };
  }
}
