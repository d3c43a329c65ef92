// The recorder's reads of windows (recording.ts): a step's read of the window its event went to, and
// which windows are on screen at each event, with a read of each one not read at its present size
// (decision 136): every screenshot masks the secret fields of every window on screen, not only of the
// windows the steps went to (a password manager beside the form, a second dialog). Reads are costly:
// a window is read once when it appears, again when its size changes (its layout, and so its fields,
// may have changed) or when a step reads it anyway; a move needs no read (the fields are kept relative
// to their window, recording-masks.ts). Between the events, the server's reports of windows mapped,
// moved or resized (`changed`, decision 140) place them for the video, and a window mapped or resized is
// read then, not at the next event only: a window opened and closed between two events is masked too.
// A window read at its size that holds secret fields has them alone read again at each listing: a
// field can move inside a window that keeps its size.
import { desktop } from './desktop.ts';
import type { KnownWindow, Lookup, SecretFields } from './recording-masks.ts';
import type { ReadResult, RecordedWindow, Rect, WindowInfo } from './types.ts';

/** The windows on screen at an instant, and the reads that instant started. */
export interface Screen {
  /** Undefined: they could not be listed (the masks are then those of the windows known before). */
  windows?: WindowInfo[];
  /** Reads of the windows new on screen, or resized, since their last read (or under way). */
  reads: { window: WindowInfo; lookup: Promise<Lookup> }[];
  /** What was known of each window listed, as the listing found it (its id may be another's later). */
  records?: Map<number, KnownWindow>;
}

const sizeOf = (w: { bounds: Rect }): string => `${w.bounds[2]}x${w.bounds[3]}`;

/**
 * A window read as it maps may not have its accessibility tree yet (the app registers it a moment
 * later): a read that failed this quickly, this soon after the window appeared, is taken again at the
 * next listing. A read that timed out (an app that does not answer) is not: it would hold the
 * recorder's AT-SPI thread at every event.
 */
const QUICK_FAILURE_MS = 500;
const NEW_WINDOW_MS = 10_000;

export class ScreenWatch {
  private readonly inFlight = new Map<number, Promise<Lookup>>();
  /** window id → its size at its last read (answered or started). */
  private readonly sizes = new Map<number, string>();
  private listing: Promise<Screen> | undefined;
  /**
   * Windows the recording said it could not check, by id, app and title (an id comes back as another
   * window's; a read under way when its window closed fails again, and is not another window).
   */
  private readonly warned = new Set<string>();
  /** window id → when it was first seen (listed or mapped), ms. */
  private readonly firstSeen = new Map<number, number>();
  /** Windows whose read failed quickly while they were new: read again at the next listing. */
  private readonly retry = new Set<number>();

  /** Reads of the secret fields alone (a window known to have some), one at a time per window. */
  private readonly fieldReads = new Map<number, Promise<Lookup>>();

  /**
   * `warn`: a warning for the recording; `list`, `read` and `readFields` (a read of the elements of
   * these roles only): the desktop's (a test's stand-ins).
   */
  constructor(
    private readonly secrets: SecretFields,
    private readonly warn: (message: string) => void,
    private readonly list: () => Promise<WindowInfo[]> = () => desktop.listWindows(),
    private readonly read: (windowId: number) => Promise<ReadResult> = (windowId) =>
      desktop.read({ windowId, actions: false }),
    private readonly readFields: (windowId: number, roles: string[]) => Promise<ReadResult> = (
      windowId,
      roles,
    ) => desktop.read({ windowId, roles, actions: false }),
  ) {}

  /**
   * Where a window's secret fields are now (decision 140): a field can move inside a window that keeps
   * its size (a message shown above it), which no listing sees. A read of the secret fields' roles only
   * (the reader gives extents to the kept roles alone). One that fails leaves the window unread.
   */
  private fieldsOf(windowId: number): Promise<Lookup> {
    const pending = this.fieldReads.get(windowId);
    if (pending) return pending;
    const p = this.readFields(windowId, this.secrets.roles)
      .then(
        (tree): Lookup => ({ tree, window: tree.window }),
        (err: unknown): Lookup => ({ error: (err as Error).message }),
      )
      .then((l) => {
        this.secrets.note(windowId, l);
        return l;
      })
      .finally(() => this.fieldReads.delete(windowId));
    this.fieldReads.set(windowId, p);
    return p;
  }

  /** One read of a window's tree at a time; events that arrive meanwhile share it. */
  lookup(windowId: number): Promise<Lookup> {
    if (!windowId) return Promise.resolve({});
    const pending = this.inFlight.get(windowId);
    if (pending) return pending;
    const started = Date.now();
    const p = this.read(windowId)
      .then(
        (tree): Lookup => {
          this.sizes.set(windowId, sizeOf(tree.window)); // its fields are known at this size
          return { tree, window: tree.window };
        },
        async (err: unknown): Promise<Lookup> => {
          const now = Date.now();
          if (now - started < QUICK_FAILURE_MS && now - (this.firstSeen.get(windowId) ?? 0) < NEW_WINDOW_MS)
            this.retry.add(windowId);
          return {
            window: (await this.list().catch((): WindowInfo[] => [])).find((w) => w.id === windowId),
            error: (err as Error).message,
          };
        },
      )
      .then((l) => {
        this.secrets.note(windowId, l); // as it answers: a window that cannot be read is grey from now on
        return l;
      })
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

  /**
   * The server reported a window mapped, moved, resized or unmapped (between the events too): the video
   * masks it at every place it passes; one mapped or resized is read now (its fields may be new).
   */
  changed(w: RecordedWindow): void {
    this.secrets.place(w.window, w.bounds);
    if (!w.mapped) {
      // Closed or hidden: the id may come back (as another window, or this one shown again): read then.
      this.secrets.gone(w.window);
      this.sizes.delete(w.window);
      this.firstSeen.delete(w.window);
      return;
    }
    if (!this.firstSeen.has(w.window)) this.firstSeen.set(w.window, Date.now());
    // (Its warning, if its read fails, comes with the next screenshot's, when it is still unread then.)
    if (this.sizes.get(w.window) !== sizeOf(w)) void this.now();
  }

  /** Resolves once the listing and every read under way have answered. */
  async idle(): Promise<void> {
    await this.listing;
    while (this.inFlight.size + this.fieldReads.size > 0)
      await Promise.all([...this.inFlight.values(), ...this.fieldReads.values()]);
  }

  private readNew(windows: WindowInfo[]): Screen {
    const on = new Set(windows.map((w) => w.id));
    for (const id of [...this.sizes.keys()]) if (!on.has(id)) this.sizes.delete(id); // closed
    for (const id of [...this.firstSeen.keys()]) if (!on.has(id)) this.firstSeen.delete(id);
    const reads: Screen['reads'] = [];
    for (const w of windows) {
      if (!this.firstSeen.has(w.id)) this.firstSeen.set(w.id, Date.now());
      // A read started meanwhile (a window's map, a step's): this screen's masks wait for it too.
      const pending = this.inFlight.get(w.id);
      if (pending) reads.push({ window: w, lookup: pending });
      if (this.sizes.get(w.id) === sizeOf(w) && !(this.retry.has(w.id) && !pending)) {
        // Read at this size: its secret fields, if it has any, are looked for again (they may have moved).
        const k = this.secrets.record(w.id);
        if (!pending && k.fields.size > 0 && !k.unread)
          reads.push({ window: w, lookup: this.fieldsOf(w.id) });
        continue;
      }
      this.retry.delete(w.id);
      // Not read again when it fails: an app that does not answer would hold every step up.
      this.sizes.set(w.id, sizeOf(w));
      if (!pending) reads.push({ window: w, lookup: this.lookup(w.id) });
    }
    const records = new Map(windows.map((w) => [w.id, this.secrets.record(w.id)]));
    return { windows, reads, records };
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
    const records = new Map<number, KnownWindow>();
    for (const x of screens) for (const [id, k] of x.records ?? []) if (!records.has(id)) records.set(id, k);
    return { masks: this.secrets.masksFor([...lookups, ...read], windows, records), read };
  }

  /**
   * The reads these screens started, answered, and a warning for each window that could not be read
   * (once per window): it is masked whole (decision 140).
   */
  async settle(screens: Screen[]): Promise<{ lookups: Lookup[]; warnings: string[] }> {
    const reads = [...new Set(screens.flatMap((s) => s.reads))];
    const lookups = await Promise.all(reads.map((r) => r.lookup));
    const warnings: string[] = [];
    reads.forEach(({ window: w }, i) => {
      const l = lookups[i]!;
      const key = `${w.id} ${w.app} ${w.title}`;
      if (l.tree || this.warned.has(key)) return;
      this.warned.add(key);
      warnings.push(
        `the window "${w.title}" (${w.app}) could not be checked for secret fields: its accessibility ` +
          `tree could not be read (${l.error ?? 'no answer'}); it is grey, whole, in the screenshots ` +
          `and the video until a read of it answers (a step in it, or its resize)`,
      );
    });
    return { lookups, warnings };
  }
}
