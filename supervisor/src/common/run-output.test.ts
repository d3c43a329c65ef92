// Reading a run's output back in order from its files, including runs recorded before output.order
// existed and a record cut short by a crash.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { orderRecord, readOutputInOrder, type OutputStream } from './run-output.ts';

let dir: string;
const made: string[] = [];
afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function read(files: { stdout?: string; stderr?: string; order?: string }): Promise<string[]> {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rb-order-'));
  made.push(dir);
  if (files.stdout !== undefined) writeFileSync(path.join(dir, 'stdout.log'), files.stdout);
  if (files.stderr !== undefined) writeFileSync(path.join(dir, 'stderr.log'), files.stderr);
  if (files.order !== undefined) writeFileSync(path.join(dir, 'output.order'), files.order);
  const got: string[] = [];
  await readOutputInOrder(dir, (s: OutputStream, d) => void got.push(`${s}:${d.toString()}`), 4);
  return got;
}

describe('readOutputInOrder', () => {
  it('follows the switch records, in chunks', async () => {
    const order = orderRecord('stdout', 2) + orderRecord('stderr', 6) + orderRecord('stdout', 4);
    expect(await read({ stdout: 'a\nb\nc\n', stderr: 'x\ny\nz\n', order })).toEqual([
      'stdout:a\n',
      'stderr:x\ny\n',
      'stderr:z\n',
      'stdout:b\n',
      'stdout:c\n',
    ]);
  });

  it('reads a run without output.order (an older version) as stdout, then stderr', async () => {
    expect(await read({ stdout: 'a\n', stderr: 'x\n' })).toEqual(['stdout:a\n', 'stderr:x\n']);
    expect(await read({ stderr: 'x\n' })).toEqual(['stderr:x\n']);
  });

  it('loses nothing when the last record was cut short or a file is shorter than its record', async () => {
    expect(await read({ stdout: 'a\nb\n', stderr: 'x\n', order: 'o 2\ne 9\no 1' })).toEqual([
      'stdout:a\n',
      'stderr:x\n',
      'stdout:b\n',
    ]);
  });
});
