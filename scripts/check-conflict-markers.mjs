// Fails when a tracked file holds a merge's conflict markers (session 18 found a `<<<<<<< HEAD` block
// landed in DEVELOPERS.md: prettier, eslint and the types all pass on Markdown that carries one).
// Runs in the lint step of scripts/test.sh.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const files = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
  .split('\0')
  .filter(Boolean);
const marker = /^(<{7} |>{7} |={7}$)/m;
const found = [];
for (const f of files) {
  let text;
  try {
    text = fs.readFileSync(path.join(root, f), 'utf8');
  } catch {
    continue; // listed but deleted in the working tree
  }
  if (text.includes('\0')) continue; // binary
  text.split('\n').forEach((line, i) => {
    if (marker.test(line)) found.push(`${f}:${i + 1}: ${line}`);
  });
}
if (found.length > 0) {
  console.error(`merge conflict markers left in tracked files (resolve them):\n${found.join('\n')}`);
  process.exit(1);
}
