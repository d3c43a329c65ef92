import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Workflow } from '@runboard/supervisor/protocol';
import { installReflected, saveWorkflow, workflowView } from './workflow-store.ts';

const SAMPLE = readFileSync(
  new URL('../../../tests/fixtures/workflows/form-fill/schema.json', import.meta.url),
  'utf8',
);
let dir: string;
let cardFile: string;
const sample = (): Workflow => JSON.parse(SAMPLE) as Workflow;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rb-workflow-'));
  mkdirSync(path.join(dir, 'cards'));
  cardFile = path.join(dir, 'cards', 'fill-form.md');
  writeFileSync(cardFile, '---\ntitle: Fill\nflow: replay\n---\n');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("a card's workflow file", () => {
  it('lives in the card folder beside the card, written whole in the stable form', () => {
    expect(workflowView(cardFile, dir)).toMatchObject({ file: 'cards/fill-form/schema.json', problems: [] });
    expect(workflowView(cardFile, dir).actionTypes).toContain('EXTRACT');
    const w = sample();
    w.task_params[0]!.example = 'Grace Hopper';
    expect(saveWorkflow(cardFile, w).ok).toBe(true);
    const text = readFileSync(path.join(dir, 'cards', 'fill-form', 'schema.json'), 'utf8');
    expect(text).toBe(SAMPLE.replace('"example": "Ada Lovelace"', '"example": "Grace Hopper"'));
    const read = workflowView(cardFile, dir);
    expect(read.text).toBe(text);
    expect(read.workflow?.task_params[0]?.example).toBe('Grace Hopper');
    expect(read.problems).toEqual([]);
  });

  it('refuses an invalid workflow whole: the file keeps its last good content', () => {
    expect(saveWorkflow(cardFile, sample()).ok).toBe(true);
    const w = sample();
    w.task_params[0]!.example = 'changed';
    w.plan.subtasks[0]!.text = 'Enter {nobody}';
    const r = saveWorkflow(cardFile, w);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems[0]!.path).toBe('plan.subtasks[0].text');
    expect(readFileSync(path.join(dir, 'cards', 'fill-form', 'schema.json'), 'utf8')).toBe(SAMPLE);
  });

  it('does not overwrite a file that changed since the editor opened it', () => {
    expect(saveWorkflow(cardFile, sample(), null).ok).toBe(true);
    expect(saveWorkflow(cardFile, sample(), null).ok).toBe(false); // "there was none" no longer holds
    const w = sample();
    w.task_name = 'Renamed';
    const stale = saveWorkflow(cardFile, w, 'some older text');
    expect(stale.ok).toBe(false);
    if (!stale.ok) expect(stale.problems[0]!.message).toContain('changed since the editor opened it');
    expect(saveWorkflow(cardFile, w, SAMPLE).ok).toBe(true);
  });

  it("installs a reflect run's workflow from its artifacts only when it is valid", () => {
    const logDir = path.join(dir, 'run');
    mkdirSync(path.join(logDir, 'artifacts'), { recursive: true });
    const missing = installReflected(cardFile, logDir);
    expect(missing.ok).toBe(false);
    writeFileSync(path.join(logDir, 'artifacts', 'schema.json'), '{"version": 1}');
    expect(installReflected(cardFile, logDir).ok).toBe(false);
    expect(existsSync(path.join(dir, 'cards', 'fill-form', 'schema.json'))).toBe(false);
    writeFileSync(path.join(logDir, 'artifacts', 'schema.json'), SAMPLE);
    expect(installReflected(cardFile, logDir).ok).toBe(true);
    expect(readFileSync(path.join(dir, 'cards', 'fill-form', 'schema.json'), 'utf8')).toBe(SAMPLE);
  });

  it('never reads through a link a reflect run left in its artifacts, nor a huge file', () => {
    // the run links its answer to a file of the person's: its text would land in the card's problems
    const logDir = path.join(dir, 'run');
    mkdirSync(path.join(logDir, 'artifacts'), { recursive: true });
    const secret = path.join(dir, 'secret.json');
    writeFileSync(secret, SAMPLE);
    symlinkSync(secret, path.join(logDir, 'artifacts', 'schema.json'));
    const linked = installReflected(cardFile, logDir);
    expect(linked.ok).toBe(false);
    if (!linked.ok) expect(linked.problems[0]!.message).toMatch(/symbolic link, not a regular file/);
    expect(existsSync(path.join(dir, 'cards', 'fill-form', 'schema.json'))).toBe(false);
    rmSync(path.join(logDir, 'artifacts', 'schema.json'));
    writeFileSync(path.join(logDir, 'artifacts', 'schema.json'), ' '.repeat(9 << 20));
    const huge = installReflected(cardFile, logDir);
    expect(huge.ok).toBe(false);
    if (!huge.ok) expect(huge.problems[0]!.message).toMatch(/more than the \d+ read here/);
  });

  it('shows a broken file with what is wrong with it', () => {
    mkdirSync(path.join(dir, 'cards', 'fill-form'));
    writeFileSync(path.join(dir, 'cards', 'fill-form', 'schema.json'), '{ broken');
    const r = workflowView(cardFile, dir);
    expect(r.text).toBe('{ broken');
    expect(r.workflow).toBeUndefined();
    expect(r.problems[0]!.message).toMatch(/^not JSON: /);
  });
});
