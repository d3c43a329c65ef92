/**
 * Attacks on the person's runtime folder (`$XDG_RUNTIME_DIR`) from inside a run.
 *
 * Its sockets: the systemd user manager (`systemd/private`), gpg-agent, ssh-agent, a rootless Docker or
 * Podman socket (a full escape by itself), pipewire, keyrings. Read-only does not stop `connect()` on a
 * pathname socket, so a desktop run (the person's display) sees only what it needs there: the session
 * bus its flow names, its display's AT-SPI bus (`at-spi/bus_<N>`) and the spread budget folder
 * (decision 122). A default run sees nothing of the folder.
 *
 * The AT-SPI spread budget's files (`runboard-atspi/`, decision 108; native/src/linux/dbus_wire_budget.cc)
 * are read by our processes outside any jail, one file per app process, its size the count of sockets
 * opened to the app. A run that could write there could use up an app's budget (every later big read
 * slower) or remove its file (more connections left in the app for ever), or plant the folder before
 * our processes make it: a desktop run reads it and must write nothing in it.
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
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, waitUntil } from '../helpers/harness.ts';
import { startBareXvfb } from '../helpers/xvfb.ts';

const MODES = ['its own user namespace', 'no namespaces (subreaper)'] as const;
const harness: Partial<Record<(typeof MODES)[number], Harness>> = {};
let xvfb: ChildProcess | undefined;
/** The person's display (a bare Xvfb): a desktop run is given its socket alone. */
let display: string;
/** The person's runtime folder, as the supervisor's environment names it. */
let runtime: string;
/** Another person's runtime folder, as a desktop flow names it, with sockets listening in it. */
let person: string;
/** The connections each planted socket (by its path below `person`) took. */
const reached: Record<string, number> = {};
const listeners: net.Server[] = [];
const BUDGET = 'runboard-atspi';
const APP = '0123456789abcdef';
const COUNT = '/tmp/at-spi2-K3Y4Z1/socket\nxxx';

beforeAll(async () => {
  runtime = mkdtempSync(path.join(os.tmpdir(), 'rb-it-runtime-'));
  chmodSync(runtime, 0o700);
  ({ xvfb, display } = await startBareXvfb());
  person = mkdtempSync(path.join(os.tmpdir(), 'rb-it-person-'));
  chmodSync(person, 0o700);
  for (const rel of [...NEEDED(display), ...DANGEROUS]) {
    mkdirSync(path.dirname(path.join(person, rel)), { recursive: true, mode: 0o700 });
    reached[rel] = 0;
    const server = net.createServer((c) => {
      reached[rel]!++;
      c.end(`${rel}\n`); // the probe's answer: the run names what it reached
    });
    await new Promise<void>((r) => server.listen(path.join(person, rel), r));
    listeners.push(server);
  }
  mkdirSync(path.join(person, BUDGET), { mode: 0o700 });
  writeFileSync(path.join(person, BUDGET, APP), COUNT, { mode: 0o600 });
  writeFileSync(path.join(person, SECRET), 'TICKET', { mode: 0o600 });
  harness[MODES[0]] = await Harness.start({ env: { XDG_RUNTIME_DIR: runtime } });
  harness[MODES[1]] = await Harness.start({ env: { XDG_RUNTIME_DIR: runtime, RUNBOARD_NAMESPACES: 'off' } });
}, 60_000);
afterAll(async () => {
  for (const h of Object.values(harness)) await h.stop();
  xvfb?.kill('SIGKILL');
  for (const l of listeners) l.close();
  rmSync(runtime, { recursive: true, force: true });
  if (person) rmSync(person, { recursive: true, force: true });
});

/** What a desktop run on display `d` needs in the runtime folder: the session bus, its AT-SPI bus. */
const NEEDED = (d: string): string[] => ['bus', `at-spi/bus_${d.slice(1)}`];
/**
 * Stand-ins for what else listens there: a rootless Docker socket and the systemd user manager (each
 * a way out of any sandbox), gpg-agent (signs and decrypts as the person), another display's AT-SPI
 * bus (drives that session's apps), an app's own AT-SPI socket (left out by decision 122).
 */
const DANGEROUS = [
  'docker.sock',
  'systemd/private',
  'gnupg/S.gpg-agent',
  'at-spi/bus_1',
  'at-spi2-socket-4242',
];
/** A file a run must not read there (a Kerberos ticket cache lives in the runtime folder). */
const SECRET = 'krb5cc_1000';

/**
 * A run's probe of the runtime folder (argv: the folder, the sockets to try, comma-separated): one line
 * per socket (what it answered, or why not), per folder listed, and for the secret file.
 */
const PROBE = `
import errno, os, socket, sys
rt = sys.argv[1]
def why(e):
    return "refused " + errno.errorcode.get(e.errno, "?")
def connect(rel):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(os.path.join(rt, rel))
        return "did " + s.recv(64).decode().strip()
    except OSError as e:
        return why(e)
    finally:
        s.close()
def listing(rel):
    try:
        return "did " + ",".join(sorted(os.listdir(os.path.join(rt, rel))))
    except OSError as e:
        return why(e)
def read(rel):
    try:
        return "did " + open(os.path.join(rt, rel)).read()
    except OSError as e:
        return why(e)
for rel in sys.argv[2].split(","):
    print("connect " + rel + ": " + connect(rel))
for rel in [".", "at-spi", "systemd", "gnupg"]:
    print("list " + rel + ": " + listing(rel))
print("read ${SECRET}: " + read("${SECRET}"))
`;

/** The probe's lines by what they name ("connect bus" → "did bus"). */
function probed(stdout: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of stdout.trim().split('\n')) {
    const at = line.indexOf(': ');
    out[line.slice(0, at)] = line.slice(at + 2);
  }
  return out;
}

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

/**
 * A run's connects to abstract names (argv: the names, comma-separated, "@" for the leading NUL): one line
 * each, "did" with what the server said or "refused ERRNO".
 */
const ABSTRACT = `
import errno, socket, sys
for name in sys.argv[1].split(","):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    try:
        s.connect("\\0" + name[1:])
        print("abstract " + name + ": did " + s.recv(64).decode().strip())
    except OSError as e:
        print("abstract " + name + ": refused " + errno.errorcode.get(e.errno, "?"))
    finally:
        s.close()
`;

/** A listener on an abstract name (argv: the name without its NUL): a line when it listens, one per connection. */
const SHIM = `
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\\0" + sys.argv[1])
s.listen(8)
print("listening")
while True:
    c, _ = s.accept()
    print("taken")
    c.sendall(b"shim\\n")
    c.close()
`;

/**
 * Connects (argv[3] of them) to one address buffer that another thread keeps rewriting between two
 * abstract names of the same length (argv[1], argv[2]): the jail reads the address once, and the kernel
 * runs a continued call with whatever the buffer holds then. One line: the outcomes and their counts.
 */
const SWAP = `
import ctypes, errno, socket, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
a = b"\\x01\\x00\\x00" + sys.argv[1].encode()
b = b"\\x01\\x00\\x00" + sys.argv[2].encode()
assert len(a) == len(b)
buf = ctypes.create_string_buffer(a, len(a))
stop = []
def flip():
    while not stop:
        ctypes.memmove(buf, b, len(b))
        ctypes.memmove(buf, a, len(a))
threading.Thread(target=flip, daemon=True).start()
seen = {}
for i in range(int(sys.argv[3])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    r = libc.connect(s.fileno(), buf, len(a))
    e = "did" if r == 0 else errno.errorcode.get(ctypes.get_errno(), "?")
    seen[e] = seen.get(e, 0) + 1
    s.close()
stop.append(1)
print("swap: " + ",".join("%s=%d" % kv for kv in sorted(seen.items())))
`;

/** A GTK client opening the display the way apps do (GDK, through Xlib and libxcb). */
const GDK = `
import gi, sys
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk
d = Gdk.Display.open(sys.argv[1])
print("gdk: " + (d.get_name() if d else "none"))
`;

describe.each(MODES)("the person's display without sandbox.allowAbstractUnix (%s)", (mode) => {
  const h = (): Harness => harness[mode]!;
  /**
   * A listener on an abstract name, as a containerd shim's (CVE-2020-15257), in Python (node's listen
   * binds the name padded with NULs to the address's full size, which no exact-length client names): it
   * prints a line per connection it takes.
   */
  let shim: ChildProcess;
  let shimName: string;
  let shimOut = '';
  beforeAll(async () => {
    // as long as the display's name, so that one address buffer can hold either (the swap below)
    const length = `/tmp/.X11-unix/X${display.slice(1)}`.length;
    shimName = `@${`rbshim${mode.length}-${process.pid}-`.padEnd(length, 'x')}`;
    shim = spawn('/usr/bin/python3', ['-u', '-c', SHIM, shimName.slice(1)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    shim.stdout!.on('data', (d: Buffer) => (shimOut += d.toString()));
    await waitUntil('the shim listens', () => shimOut.includes('listening\n'), 50_000);
  });
  afterAll(() => {
    shim.kill('SIGKILL');
  });
  const desktop = () => ({ desktop: true, env: { DISPLAY: display, XDG_RUNTIME_DIR: runtime } });

  const taken = (): number => shimOut.split('taken\n').length - 1;

  it("a desktop run reaches no abstract socket of the machine, X's included", async () => {
    const before = taken();
    const x = `@/tmp/.X11-unix/X${display.slice(1)}`;
    const rec = await h().run(['/usr/bin/python3', '-c', ABSTRACT, [shimName, x].join(',')], desktop());
    expect(rec.result.status, rec.stderr).toBe('succeeded');
    const got = probed(rec.stdout);
    // Landlock's scope refuses another's abstract name; an X display's is answered as if no one listened
    // there (decision 134), on which X clients take the display's path socket
    expect(got[`abstract ${shimName}`], rec.stdout).toBe('refused EPERM');
    expect(got[`abstract ${x}`], rec.stdout).toBe('refused ECONNREFUSED');
    expect(taken()).toBe(before);
  });

  it('the same run with allowAbstractUnix reaches that listener (it is live: the refusal above is the scope)', async () => {
    const before = taken();
    const rec = await h().run(['/usr/bin/python3', '-c', ABSTRACT, shimName], {
      ...desktop(),
      sandbox: { allowAbstractUnix: true },
    });
    expect(rec.result.status, rec.stderr).toBe('succeeded');
    expect(probed(rec.stdout)[`abstract ${shimName}`], rec.stdout).toBe('did shim');
    await waitUntil('the shim counts the connection', () => taken() === before + 1, 30_000);
  });

  it("an address swapped between X's name and another by a second thread during connects reaches neither", async () => {
    const before = taken();
    const x = `/tmp/.X11-unix/X${display.slice(1)}`;
    const rec = await h().run(['/usr/bin/python3', '-c', SWAP, x, shimName.slice(1), '600'], desktop());
    expect(rec.result.status, rec.stderr).toBe('succeeded');
    // one line: how many connects ended how; none connected, whichever name the jail read
    expect(rec.stdout, rec.stdout).toMatch(/^swap: /);
    expect(rec.stdout, rec.stdout).not.toContain('did');
    expect(taken()).toBe(before);
  });

  it('X clients in a desktop run open the display by its path socket: Xlib (xdpyinfo), GDK', async () => {
    const rec = await h().run(
      [
        '/bin/sh',
        '-c',
        'xdpyinfo | grep "^name of display" && /usr/bin/python3 -c "$1" "$DISPLAY"',
        'sh',
        GDK,
      ],
      desktop(),
    );
    expect(rec.result.status, rec.stderr + rec.stdout).toBe('succeeded');
    expect(rec.stdout).toContain(`name of display:    ${display}`);
    expect(rec.stdout).toContain(`gdk: ${display}`);
  });

  it("a run's own abstract servers stay reachable, an X display's name included (its own domain)", async () => {
    const rec = await h().run(
      [
        '/usr/bin/python3',
        '-c',
        `
import os, socket, threading
def serve(srv):
    while True:
        c, _ = srv.accept()
        try:
            c.sendall(b"own")
        except OSError:
            pass  # with a mount namespace the jail's probe of an X name comes first, closed at once
        c.close()
# a name of its own, and an X display's name of its own (an X server the run started)
for name in ["\\0rb-it-own-%d" % os.getpid(), "\\0/tmp/.X11-unix/X%d" % (9000 + os.getpid() % 1000)]:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(name)
    srv.listen(8)
    threading.Thread(target=serve, args=(srv,), daemon=True).start()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(name)
    print("own: " + s.recv(8).decode())
`,
      ],
      desktop(),
    );
    expect(rec.result.status, rec.stderr).toBe('succeeded');
    expect(rec.stdout).toBe('own: own\nown: own\n');
  });
});

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

    it("a desktop run (the person's display) reads the budget folder and changes nothing in the runtime folder", async () => {
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

    it("a desktop run reaches only the sockets it needs in the person's runtime folder", async () => {
      const before = { ...reached };
      const rec = await h().run(
        ['/usr/bin/python3', '-c', PROBE, person, [...NEEDED(display), ...DANGEROUS].join(',')],
        {
          desktop: true,
          env: {
            DISPLAY: display,
            XDG_RUNTIME_DIR: person,
            DBUS_SESSION_BUS_ADDRESS: `unix:path=${person}/bus`,
          },
        },
      );
      expect(rec.result.status, rec.stderr).toBe('succeeded');
      const got = probed(rec.stdout);
      // what it needs: the session bus the flow names, its display's AT-SPI bus
      for (const rel of NEEDED(display)) expect(got[`connect ${rel}`], rec.stdout).toBe(`did ${rel}`);
      // nothing else there is read or listed: a ticket cache, the agents' and managers' folders
      expect(got[`read ${SECRET}`], rec.stdout).toMatch(/^refused /);
      for (const rel of ['systemd', 'gnupg']) expect(got[`list ${rel}`], rec.stdout).toMatch(/^refused /);
      // nothing else there is reached, whatever its name: with a user namespace it is not there, in the
      // subreaper fallback the jail makes the run's connections and refuses it (decision 133)
      for (const rel of DANGEROUS) expect(got[`connect ${rel}`], rec.stdout).toMatch(/^refused /);
      for (const rel of DANGEROUS) expect(reached[rel], rel).toBe(before[rel]);
      if (mode === 'its own user namespace') {
        // the folder holds the needed entries alone
        expect(got['list .'], rec.stdout).toBe(`did at-spi,bus,${BUDGET}`);
        expect(got['list at-spi'], rec.stdout).toBe(`did bus_${display.slice(1)}`);
      } else {
        // Landlock's allow-list: the folder can be neither listed nor read
        expect(got['list .'], rec.stdout).toMatch(/^refused /);
        expect(got['list at-spi'], rec.stdout).toMatch(/^refused /);
      }
    });

    it("a desktop flow reaches another socket there when its sandbox.read names it (the person's choice)", async () => {
      const rec = await h().run(['/usr/bin/python3', '-c', PROBE, person, 'gnupg/S.gpg-agent,docker.sock'], {
        desktop: true,
        env: { DISPLAY: display, XDG_RUNTIME_DIR: person },
        sandbox: { read: [path.join(person, 'gnupg', 'S.gpg-agent')] },
      });
      expect(rec.result.status, rec.stderr).toBe('succeeded');
      const got = probed(rec.stdout);
      expect(got['connect gnupg/S.gpg-agent'], rec.stdout).toBe('did gnupg/S.gpg-agent');
      expect(got['connect docker.sock'], rec.stdout).toMatch(/^refused /);
    });

    it("a default run reaches no socket of the person's runtime folder", async () => {
      const before = { ...reached };
      const all = [...NEEDED(display), ...DANGEROUS];
      const rec = await h().run(['/usr/bin/python3', '-c', PROBE, person, all.join(',')]);
      expect(rec.result.status, rec.stderr).toBe('succeeded');
      const got = probed(rec.stdout);
      for (const rel of all) expect(got[`connect ${rel}`], rec.stdout).toMatch(/^refused /);
      expect(got['list .'], rec.stdout).toMatch(/^refused /);
      expect(reached).toEqual(before);
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
