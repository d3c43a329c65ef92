/**
 * A run on a private display drives the programs of its display's stack, which the supervisor started:
 * the window manager reads its configuration from the stack's HOME, the run's own scratch home, which
 * the run can write. A run that plants a key binding, has openbox reload it and presses the key gets
 * its command run by the window manager. The stack is confined like a run, so that command cannot read
 * Runboard's keys.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { act, cuEvents, CuHarness, final } from './cu-harness.ts';

let t: CuHarness;
beforeAll(async () => {
  t = await CuHarness.start({ desktop: false });
});
afterAll(async () => {
  await t?.stop();
});

describe("a private display's stack", () => {
  it('runs a command the run bound to a key without access to the keys', async () => {
    const key = path.join(t.h.paths.keysDir, 'grant.key');
    const keyHex = readFileSync(key).toString('hex');
    // The bound command reports into HOME, which the stack and the run share: what it read, the run reads.
    const rc = `<?xml version="1.0"?><openbox_config xmlns="http://openbox.org/3.4/rc"><keyboard><keybind key="W-F12"><action name="Execute"><command>sh -c 'echo RAN &gt; "$HOME/ran"; cat ${key} &gt; "$HOME/leak"'</command></action></keybind></keyboard></openbox_config>`;
    const plant = [
      'mkdir -p "$HOME/.config/openbox"',
      `printf '%s' ${JSON.stringify(rc)} > "$HOME/.config/openbox/rc.xml"`,
      'openbox --reconfigure',
      'sleep 0.5',
      'echo planted',
    ].join('; ');
    const collect = 'sleep 1; cat "$HOME/ran"; od -An -tx1 "$HOME/leak" | tr -d " \\n"';
    t.episodes([
      {
        name: 'plant',
        match: 'CU-PLANT',
        turns: [
          { toolCalls: [{ name: 'terminal_exec', arguments: { command: plant, shell: true } }] },
          act({ action: 'key', keys: 'super+F12' }),
          { toolCalls: [{ name: 'terminal_exec', arguments: { command: collect, shell: true } }] },
          final({ status: 'SUCCESS', summary: 'planted', error: '', questions: [] }),
        ],
      },
    ]);
    const rec = await t.run(
      t.card('plant', 'CU-PLANT'),
      t.flow({ sandbox: {} }, { privateDisplay: true, displaySize: '800x600x24' }),
    );
    expect(rec.result.status, JSON.stringify(rec.result.termination) + rec.stderr).toBe('succeeded');
    const steps = cuEvents(rec, 'cu-step').map((e) => (e.result as { stdout?: string }).stdout ?? '');
    expect(steps[0]).toContain('planted');
    // The window manager ran the command, and the command could not read the key.
    expect(steps[2]).toContain('RAN');
    expect(steps[2]).not.toContain(keyHex);
  });
});
