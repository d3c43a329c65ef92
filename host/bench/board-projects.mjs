// What the board benchmarks share (browser.mjs, start.mjs): the generated projects and the first-screen test.
/* global document -- firstScreen runs in the browser (page.waitForFunction) */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** A project at `project` with `n` cards (backlog, done, failed in turn) on a `shell` command flow. */
export function writeBoardProject(project, n) {
  mkdirSync(path.join(project, 'cards'), { recursive: true });
  mkdirSync(path.join(project, 'workspace'));
  writeFileSync(
    path.join(project, 'config.yaml'),
    'version: 1\nflows:\n  shell: { runner: command, cap: 2 }\n',
  );
  const cols = ['backlog', 'done', 'failed'];
  for (let i = 0; i < n; i++)
    writeFileSync(
      path.join(project, 'cards', `c${String(i).padStart(4, '0')}.md`),
      `---\nid: c${i}\ntitle: Card number ${i}\nflow: shell\nworkspace: ./workspace\ncommand: "true"\nstatus: ${cols[i % 3]}\n---\n# Task\nCard ${i}.\n`,
    );
}

/** Every column's count shown (summing to `total`) and each non-empty column's first card in the DOM. */
export const firstScreen = (total) =>
  [...document.querySelectorAll('.column .count')].reduce(
    (n, e) => n + Number(e.textContent.split('/')[0]),
    0,
  ) === total &&
  [...document.querySelectorAll('.column')].every(
    (col) => col.querySelector('.count').textContent.startsWith('0') || col.querySelector('li.card'),
  );
