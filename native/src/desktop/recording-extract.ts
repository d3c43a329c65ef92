// Where an extract added to a recording was taken from (seed 002: "capture the current pre-action
// screenshot and store an extract event"; recording.ts `addExtract`). With Ctrl+I that is the screen
// and the window at the key, read then (the prompt opens next); with the Pause button, or while not
// paused, it is the screen and the window with the keyboard focus as they are when the extract is added
// (decision 130). The element is the one under the pointer then, else the focused field; a step without
// one says why (`elementMissing`).
import type { ManifestStep } from '@runboard/project/recording';
import { desktop } from './desktop.ts';
import { findPath, hitTest, manifestElement } from './recording-elements.ts';
import type { Lookup } from './recording-masks.ts';
import type { Element, WindowInfo } from './types.ts';

/** What an extract was taken from: a window's read and where the pointer was, or why there is no window. */
export interface Here {
  lookup: Lookup;
  pointer?: [number, number];
  /** Set when no window could be named at all. */
  why?: string;
}

/** Where the pointer is now (undefined: on another X screen, or it could not be asked). */
export function pointerNow(): Promise<[number, number] | undefined> {
  return desktop.pointer().then(
    (p): [number, number] | undefined => (p.onScreen ? [p.x, p.y] : undefined),
    () => undefined,
  );
}

/**
 * The window with the keyboard focus and the pointer, now. `read`: the recording's read of a window
 * (one at a time per window, shared with the steps').
 */
export async function hereNow(read: (windowId: number) => Promise<Lookup>): Promise<Here> {
  const [windows, pointer] = await Promise.all([
    desktop.listWindows().catch((): WindowInfo[] => []),
    pointerNow(),
  ]);
  const focused = windows.find((w) => w.focused);
  const at = pointer ? { pointer } : {};
  if (!focused) return { lookup: {}, ...at, why: 'no window had the keyboard focus when it was added' };
  return { lookup: await read(focused.id), ...at };
}

/** The extract's window and element, or why it has none (the window is named only with its element). */
export function extractSource(
  here: Here,
  isSecret: (e: Element) => boolean,
): Pick<ManifestStep, 'window' | 'element' | 'elementMissing'> {
  if (here.why) return { window: null, elementMissing: here.why };
  const { tree, window: w, error } = here.lookup;
  const named = w ? `the window "${w.title}" (${w.app})` : 'its window';
  if (!tree)
    return {
      window: null,
      elementMissing: `the accessibility tree of ${named} could not be read${error ? ` (${error})` : ''}`,
    };
  const roots = tree.elements;
  const hit =
    (here.pointer ? hitTest(roots, here.pointer[0], here.pointer[1]) : undefined) ??
    findPath(roots, (x) => x.focused && x.editable);
  const win = w ?? tree.window;
  if (!hit || !win) {
    const where = here.pointer ? `under the pointer at (${here.pointer.join(', ')})` : 'under the pointer';
    return {
      window: null,
      elementMissing: `nothing in ${named} lay ${where}, and no field there had the focus`,
    };
  }
  return {
    window: { id: win.id, app: win.app, title: win.title, bounds: win.bounds },
    element: manifestElement(hit, isSecret),
  };
}
