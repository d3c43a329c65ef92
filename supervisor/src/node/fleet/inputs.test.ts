import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { badInputName, cardRecording, collectInputs, InputsRefused } from './inputs.ts';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('fleet inputs', () => {
  it('takes only plain relative names under the four places', () => {
    expect(badInputName('prompt/reflect_pass_a/prompt.md')).toBeNull();
    expect(badInputName('project/recordings/rec-20260101-000000-abc123/step-1.png')).toBeNull();
    expect(badInputName('input/video.mp4')).toBeNull();
    expect(badInputName('prompt/../../x')).toBe('a ".." component');
    expect(badInputName('/etc/passwd')).toBe('an absolute path');
    expect(badInputName('project/config.yaml')).toMatch(/^a place other than/);
    expect(badInputName('project/cards/card.md')).toMatch(/^a place other than/);
    expect(badInputName('prompt//x')).toBe('a "" component');
  });

  it("finds the recording a card names only when it is a recording's id", () => {
    expect(cardRecording('---\ntitle: x\nrecording: rec-20260101-000000-abc123\n---\n')).toBe(
      'rec-20260101-000000-abc123',
    );
    expect(cardRecording("---\nrecording: 'rec-20260101-000000-abc123' # mine\n---\n")).toBe(
      'rec-20260101-000000-abc123',
    );
    expect(cardRecording('---\nrecording: ../../etc\n---\n')).toBeUndefined();
    expect(cardRecording('no front matter\nrecording: rec-20260101-000000-abc123\n')).toBeUndefined();
  });

  it('refuses a link among the inputs, saying what to do', async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rb-inputs-'));
    const prompt = path.join(dir, 'prompts');
    mkdirSync(prompt);
    writeFileSync(path.join(prompt, 'prompt.md'), 'hi');
    symlinkSync('/etc/passwd', path.join(prompt, 'config.yaml'));
    const src = {
      runner: 'codex',
      cardPath: path.join(dir, 'cards', 'c.md'),
      cardText: '',
      project: dir,
      prompt,
      extractInput: undefined,
    };
    await expect(collectInputs(src)).rejects.toThrow(InputsRefused);
    await expect(collectInputs(src)).rejects.toThrow(
      /is a link: a run's inputs are sent .* only as regular files/,
    );
  });
});
