/**
 * The board's confirmations (board-confirm.ts) over a real ledger in a temporary state root: which cards
 * wait for a confirm, config.yaml's change waiting with the last confirmed config, and the ledger written
 * before a file with its undo.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { digestOf, Ledger } from '@runboard/supervisor/ledger';
import { configState, confirmationOf, confirmFirst } from './board-confirm.ts';
import { parseConfig, type Card } from './project.ts';

const V1 = 'version: 2\nflows:\n  shell: { runner: command, cap: 2 }\n';
const V2 = 'version: 2\nflows:\n  shell: { runner: command, cap: 2 }\n  more: { runner: command }\n';

describe('board confirmations', () => {
  let dir: string;
  let ledger: Ledger;
  const configFile = (): string => path.join(dir, 'config.yaml');
  const card = (front: Card['front']): Card => ({ file: path.join(dir, 'cards', 'a.md'), front }) as Card;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rb-confirm-'));
    ledger = Ledger.open(path.join(dir, '.state'), dir);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a card that would run by itself waits for a confirm of its text, saying what a confirm does', () => {
    const queued = card({ title: 'A', flow: 'shell', status: 'queued' });
    expect(confirmationOf(queued, ledger, 'd1')).toEqual({
      digest: 'd1',
      reason: 'changed outside the board: Confirm to run it',
    });
    const scheduled = card({ title: 'A', flow: 'shell', schedule: 'every day at 8:00' });
    expect(confirmationOf(scheduled, ledger, 'd1')?.reason).toBe(
      'changed outside the board: Confirm for its schedule to fire',
    );
    ledger.record([{ file: queued.file, digest: 'd1' }]);
    expect(confirmationOf(queued, ledger, 'd1')).toBeUndefined(); // confirmed
    expect(confirmationOf(queued, undefined, 'd2')).toBeUndefined(); // no ledger: all confirmed
    const backlog = card({ title: 'A', flow: 'shell', status: 'backlog' });
    expect(confirmationOf(backlog, ledger, 'd2')).toBeUndefined(); // would not run by itself
  });

  it('a changed config.yaml waits with what changed; the board keeps the confirmed one', () => {
    ledger.recordConfig(V1);
    const v1 = parseConfig(configFile(), V1);
    const s = configState(configFile(), V2, null, ledger, { config: v1, confirmedText: V1 });
    expect(Object.keys(s.config.flows)).toEqual(['shell']);
    expect(s.confirmedText).toBe(V1);
    expect(s.configChange?.digest).toBe(digestOf(V2));
    expect(s.configChange?.changes.join('; ')).toMatch(/more/);
    expect(s.configChange?.noBase).toBeUndefined();
    ledger.recordConfig(V2); // the person confirmed it
    const after = configState(configFile(), V2, null, ledger, { config: s.config, confirmedText: V1 });
    expect(Object.keys(after.config.flows)).toEqual(['shell', 'more']);
    expect(after).toMatchObject({ confirmedText: V2, configChange: undefined });
  });

  it('with no confirmed config known, nothing starts until the person confirms one', () => {
    const s = configState(configFile(), V2, null, ledger, { config: undefined, confirmedText: undefined });
    expect(s.configChange).toMatchObject({ noBase: true });
    expect(s.configChange?.changes[0]).toMatch(/no card starts until you confirm it/);
    expect(Object.keys(s.config.flows)).toEqual(['shell', 'more']); // shown, not launched with
    expect(() =>
      configState(configFile(), 'version: 2\nflows: [', null, ledger, {
        config: undefined,
        confirmedText: V1,
      }),
    ).toThrow();
  });

  it('the ledger is written before the file, and its undo puts the confirmation back', () => {
    const file = path.join(dir, 'cards', 'a.md');
    ledger.record([{ file, digest: digestOf('old') }]);
    const undo = confirmFirst(ledger, false, file, 'new');
    expect(ledger.entry(file)).toBe(digestOf('new'));
    undo();
    expect(ledger.entry(file)).toBe(digestOf('old'));
    const undoConfig = confirmFirst(ledger, true, configFile(), V1);
    expect(ledger.confirmedConfig()).toBe(V1);
    undoConfig();
    expect(ledger.confirmedConfig()).toBeUndefined();
  });
});
