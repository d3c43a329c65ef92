// What the recorder (recording.ts) keeps out of its screenshots and video: every password field it has
// seen, and every field the person said holds a secret when the recording began (`secretFields`, by
// accessible name), per window, wherever the step reads saw them. A field's reported bounds change with
// its content: every rectangle seen is kept, a stale one only masks more.
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

export class SecretFields {
  /** window id → its secret fields' rectangles. */
  private readonly known = new Map<number, Map<string, Rect>>();
  readonly isSecret: (e: SecretProbe) => boolean;

  constructor(names: readonly string[] = []) {
    this.isSecret = secretTest(names);
  }

  /**
   * Rectangles to mask for a step: the secret fields its reads found, and every one seen before in the
   * same windows.
   */
  masksFor(lookups: Lookup[]): Rect[] {
    for (const l of lookups) {
      if (!l.tree) continue;
      const known = this.known.get(l.tree.window.id) ?? new Map<string, Rect>();
      for (const r of secrets(l.tree.elements, this.isSecret)) known.set(r.join(','), r);
      this.known.set(l.tree.window.id, known);
    }
    const ids = new Set(
      lookups.map((l) => l.window?.id ?? l.tree?.window.id).filter((id) => id !== undefined),
    );
    return [...ids].flatMap((id) => [...(this.known.get(id)?.values() ?? [])]);
  }

  /** Whether a secret field was seen in any of these windows (now or before). */
  near(lookups: Lookup[]): boolean {
    const ids = lookups.map((l) => l.window?.id ?? l.tree?.window.id).filter((id) => id !== undefined);
    return (
      ids.some((id) => (this.known.get(id)?.size ?? 0) > 0) ||
      lookups.some((l) => l.tree !== undefined && secrets(l.tree.elements, this.isSecret).length > 0)
    );
  }

  /** Every rectangle seen, in every window. */
  all(): Rect[] {
    return [...this.known.values()].flatMap((m) => [...m.values()]);
  }

  /**
   * Every secret field the recording has seen, wherever it was seen, is covered in the video for its
   * whole length (it was only known from the accessibility reads at the steps, so it is masked
   * before and after too). A video that cannot be masked is removed; `warn` says so.
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
