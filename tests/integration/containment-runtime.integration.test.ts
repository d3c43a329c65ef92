/**
 * Attacks on the person's runtime folder (`$XDG_RUNTIME_DIR`) from inside a run: the AT-SPI spread
 * budget's files (`runboard-atspi/`, decision 108; native/src/linux/dbus_wire_budget.cc) are read by
 * our processes outside any jail, one file per app process, its size the count of sockets opened to the
 * app. A run that could write there could use up an app's budget (every later big read slower) or
 * remove its file (more connections left in the app for ever), or plant the folder before our
 * processes make it. A default run must not reach the runtime folder at all; a desktop run (the
 * person's display: its session bus lives there) reads it, and must write nothing in it.
 */
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '../helpers/harness.ts';
import { startBareXvfb } from '../helpers/xvfb.ts';

const MODES = ['its own user namespace', 'no namespaces (subreaper)'] as const;
const harness: Partial<Record<(typeof MODES)[number], Harness>> = {};
let xvfb: ChildProcess | undefined;
/** The person's display (a bare Xvfb): a desktop run is given its socket alone. */
let display: string;
/** The person's runtime folder, as the supervisor's environment names it. */
let runtime: string;
const BUDGET = 'runboard-atspi';
const APP = '0123456789abcdef';
const COUNT = '/tmp/at-spi2-K3Y4Z1/socket\nxxx';

beforeAll(async () => {
  runtime = mkdtempSync(path.join(os.tmpdir(), 'rb-it-runtime-'));
  chmodSync(runtime, 0o700);
  ({ xvfb, display } = await startBareXvfb());
  harness[MODES[0]] = await Harness.start({ env: { XDG_RUNTIME_DIR: runtime } });
  harness[MODES[1]] = await Harness.start({ env: { XDG_RUNTIME_DIR: runtime, RUNBOARD_NAMESPACES: 'off' } });
}, 60_000);
afterAll(async () => {
  for (const h of Object.values(harness)) await h.stop();
  xvfb?.kill('SIGKILL');
  rmSync(runtime, { recursive: true, force: true });
});

/** The budget folder as our desktop-cli leaves it: an app's count file (3 sockets taken). */
function budget(): string {
  const dir = path.join(runtime, BUDGET);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { mode: 0o700 });
  writeFileSync(path.join(dir, APP), COUNT, { mode: 0o600 });
  return dir;
}

/** Everything under the runtime folder, with contents and modes. */
function snapshot(): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const p = path.join(dir, name);
      const st = statSync(p);
      out[path.relative(runtime, p)] = st.isDirectory()
        ? `dir ${(st.mode & 0o7777).toString(8)}`
        : `${(st.mode & 0o7777).toString(8)} ${readFileSync(p, 'utf8')}`;
      if (st.isDirectory()) walk(p);
    }
  };
  walk(runtime);
  return out;
}

/**
 * Every way to change the budget folder, as a run's code would try them (no shell: its messages would
 * be read as the run's denials); one line per try, whether it did. argv: the runtime folder, the tries
 * left out (comma-separated).
 */
const ATTACK = `
import errno, os, shutil, sys
rt = sys.argv[1]
d = os.path.join(rt, "${BUDGET}")
f = os.path.join(d, "${APP}")
def append():
    with open(f, "ab") as o: o.write(b"y" * 48)
def truncate():
    open(f, "wb").close()
def create():
    os.close(os.open(os.path.join(d, "fedcba9876543210"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
def replace_folder():
    os.rename(d, os.path.join(rt, "moved"))
    os.mkdir(d, 0o700)
tries = [
    ("list-runtime", lambda: os.listdir(rt)),
    ("read-count", lambda: open(f, "rb").read()),
    ("append", append),
    ("truncate", truncate),
    ("chmod", lambda: os.chmod(f, 0o666)),
    ("remove", lambda: os.unlink(f)),
    ("rename", lambda: os.rename(f, os.path.join(d, "gone"))),
    ("create", create),
    ("link", lambda: os.symlink("/dev/null", os.path.join(d, "link"))),
    ("fifo", lambda: os.mkfifo(os.path.join(d, "fifo"))),
    ("remove-folder", lambda: shutil.rmtree(d)),
    ("replace-folder", replace_folder),
    ("plant-folder", lambda: os.mkdir(os.path.join(rt, "planted"), 0o700)),
]
skip = sys.argv[2].split(",") if len(sys.argv) > 2 else []
for name, attempt in tries:
    if name in skip:
        continue
    try:
        attempt()
        print(name + ": did")
    except OSError as e:
        print(name + ": refused " + errno.errorcode.get(e.errno, "?"))
`;

const REFUSED = [
  'append',
  'truncate',
  'chmod',
  'remove',
  'rename',
  'create',
  'link',
  'fifo',
  'remove-folder',
  'replace-folder',
  'plant-folder',
];

describe.each(MODES)(
  "the AT-SPI spread budget's files (the person's runtime folder), attacked from a run (%s)",
  (mode) => {
    const h = (): Harness => harness[mode]!;
    // Metadata (chmod) is the subreaper fallback's documented residual: no mount namespace, and Landlock
    // does not govern it (docs/security-model.md "Fallback"). A budget folder opened to others is not
    // used at all (dbus_wire_budget.cc OwnDir: nothing spread), which fails safe.
    const skip = mode === 'no namespaces (subreaper)' ? 'chmod' : '';
    const refused = REFUSED.filter((n) => n !== skip);
    it('a default run cannot reach the runtime folder: not listed, not read, nothing written', async () => {
      budget();
      const before = snapshot();
      const rec = await h().run(['/usr/bin/python3', '-c', ATTACK, runtime, skip]);
      expect(rec.result.status, rec.stderr).toBe('succeeded');
      for (const name of ['list-runtime', 'read-count', ...refused])
        expect(rec.stdout, rec.stdout).toContain(`${name}: refused `);
      expect(snapshot()).toEqual(before);
    });

    it("a desktop run (the person's display) reads the runtime folder and changes nothing in it", async () => {
      budget();
      const before = snapshot();
      const rec = await h().run(['/usr/bin/python3', '-c', ATTACK, runtime, skip], {
        desktop: true,
        env: { DISPLAY: display, XDG_RUNTIME_DIR: runtime },
      });
      expect(rec.result.status, rec.stderr).toBe('succeeded');
      for (const name of refused) expect(rec.stdout, rec.stdout).toContain(`${name}: refused `);
      expect(snapshot()).toEqual(before);
    });

    it('a desktop run cannot make the budget folder before our processes do', async () => {
      rmSync(path.join(runtime, BUDGET), { recursive: true, force: true });
      const rec = await h().run(['/bin/sh', '-c', `mkdir -m 0700 ${runtime}/${BUDGET} && echo made`], {
        desktop: true,
        env: { DISPLAY: display, XDG_RUNTIME_DIR: runtime },
      });
      expect(rec.stdout).not.toContain('made');
      expect(readdirSync(runtime).filter((n) => n !== 'runboard')).toEqual([]);
    });
  },
);
