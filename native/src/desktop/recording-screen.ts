// The recorder's reads of windows (recording.ts): a step's read of the window its event went to, and
// which windows are on screen at each event, with a read of each one not read at its present size
// (decision 136): every screenshot masks the secret fields of every window on screen, not only of the
// windows the steps went to (a password manager beside the form, a second dialog). Reads are costly:
// a window is read once when it appears, again when its size changes (its layout, and so its fields,
// may have changed) or when a step reads it anyway; a move needs no read (the fields are kept relative
// to their window, recording-masks.ts).
import { desktop } from './desktop.ts';
import type { Lookup, SecretFields } from './recording-masks.ts';
import type { ReadResult, Rect, WindowInfo } from './types.ts';

/** The windows on screen at an instant, and the reads that instant started. */
export interface Screen {
  /** Undefined: they could not be listed (the masks are then those of the windows known before). */
  windows?: WindowInfo[];
  /** Reads of the windows new on screen, or resized, since their last read. */
  reads: { window: WindowInfo; lookup: Promise<Lookup> }[];
}

const sizeOf = (w: WindowInfo): string => `${w.bounds[2]}x${w.bounds[3]}`;

export class ScreenWatch {
  private readonly inFlight = new Map<number, Promise<Lookup>>();
  /** window id → its size at its last read (answered or started). */
  private readonly sizes = new Map<number, string>();
  private listing: Promise<Screen> | undefined;
  /** Windows the recording said it could not check. */
  private readonly warned = new Set<number>();

  /** `warn`: a warning for the recording; `list` and `read`: the desktop's (a test's stand-ins). */
  constructor(
    private readonly secrets: SecretFields,
    private readonly warn: (message: string) => void,
    private readonly list: () => Promise<WindowInfo[]> = () => desktop.listWindows(),
    private readonly read: (windowId: number) => Promise<ReadResult> = (windowId) =>
      desktop.read({ windowId, actions: false }),
  ) {}

  /** One read of a window's tree at a time; events that arrive meanwhile share it. */
  lookup(windowId: number): Promise<Lookup> {
    if (!windowId) return Promise.resolve({});
    const pending = this.inFlight.get(windowId);
    if (pending) return pending;
    const p = this.read(windowId)
      .then(
        (tree): Lookup => {
          this.sizes.set(windowId, sizeOf(tree.window)); // its fields are known at this size
          return { tree, window: tree.window };
        },
        async (err: unknown): Promise<Lookup> => ({
          window: (await this.list().catch((): WindowInfo[] => [])).find((w) => w.id === windowId),
          error: (err as Error).message,
        }),
      )
      .finally(() => this.inFlight.delete(windowId));
    this.inFlight.set(windowId, p);
    return p;
  }

  /** The windows on screen now, each new or resized one being read; calls meanwhile share one listing. */
  now(): Promise<Screen> {
    this.listing ??= this.list()
      .then(
        (windows) => this.readNew(windows),
        (): Screen => ({ reads: [] }),
      )
      .finally(() => (this.listing = undefined));
    return this.listing;
  }

  /** Resolves once the listing and every read under way have answered. */
  async idle(): Promise<void> {
    await this.listing;
    while (this.inFlight.size > 0) await Promise.all(this.inFlight.values());
  }

  private readNew(windows: WindowInfo[]): Screen {
    const on = new Set(windows.map((w) => w.id));
    for (const id of [...this.sizes.keys()]) if (!on.has(id)) this.sizes.delete(id); // closed
    const reads: Screen['reads'] = [];
    for (const w of windows) {
      if (this.sizes.get(w.id) === sizeOf(w)) continue;
      // Not read again when it fails: an app that does not answer would hold every step up.
      this.sizes.set(w.id, sizeOf(w));
      reads.push({ window: w, lookup: this.lookup(w.id) });
    }
    return { windows, reads };
  }

  /**
   * The masks of a screenshot: the secret fields of every window on the first of `screens` (its
   * instant; the later ones' windows too: a window that opened during a step only masks more) and of
   * the windows `lookups` read, once the reads those screens started have answered; `read`: those reads.
   */
  async masksAt(screens: Screen[], lookups: Lookup[] = []): Promise<{ masks: Rect[]; read: Lookup[] }> {
    const { lookups: read, warnings } = await this.settle(screens);
    for (const w of warnings) this.warn(w);
    const windows = screens.some((x) => x.windows) ? screens.flatMap((x) => x.windows ?? []) : undefined;
    return { masks: this.secrets.masksFor([...lookups, ...read], windows), read };
  }

  /**
   * The reads these screens started, answered, and a warning for each window that could not be read
   * (once per window): its secret fields, if any, are not masked.
   */
  async settle(screens: Screen[]): Promise<{ lookups: Lookup[]; warnings: string[] }> {
    const reads = [...new Set(screens.flatMap((s) => s.reads))];
    const lookups = await Promise.all(reads.map((r) => r.lookup));
    const warnings: string[] = [];
    reads.forEach(({ window: w }, i) => {
      const l = lookups[i]!;
      if (l.tree || this.warned.has(w.id)) return;
      this.warned.add(w.id);
      warnings.push(
        `the window "${w.title}" (${w.app}) could not be checked for secret fields: its accessibility ` +
          `tree could not be read (${l.error ?? 'no answer'}); a password shown in it is not masked in ` +
          `the screenshots or the video`,
      );
    });
    return { lookups, warnings };
  }
}
