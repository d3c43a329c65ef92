// What the recorder's test files share: where to click an element, and a recording's steps.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Element, ManifestStep } from '../../native/src/index.ts';

/** The middle of an element's bounds, where a click on it goes. */
export const centre = (e: Element): [number, number] => [
  e.bounds[0] + Math.floor(e.bounds[2] / 2),
  e.bounds[1] + Math.floor(e.bounds[3] / 2),
];

/** A recording's steps, as its manifest.jsonl holds them. */
export function manifest(dir: string): ManifestStep[] {
  return readFileSync(path.join(dir, 'manifest.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ManifestStep);
}
