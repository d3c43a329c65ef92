/**
 * Every unit test file gets a home of its own: a fresh, empty RUNBOARD_HOME and XDG folders, removed
 * afterwards. Code that reads the user's config or state (a BoardStore, the config layers) then never
 * sees what this machine's user, or an earlier run, left in ~/.config or ~/.local.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

const home = mkdtempSync(path.join(os.tmpdir(), 'rb-unit-home-'));
process.env.RUNBOARD_HOME = path.join(home, 'runboard');
process.env.XDG_CONFIG_HOME = path.join(home, 'config');
process.env.XDG_DATA_HOME = path.join(home, 'data');
delete process.env.RUNBOARD_USER_CONFIG;

afterAll(() => rmSync(home, { recursive: true, force: true }));
