/**
 * Private virtual displays for computer-use runs (flow `computerUse.privateDisplay`): an
 * Xvfb display with its own session D-Bus, AT-SPI bus and window manager per run, and optionally the
 * card's app started in it, so several desktop runs go in parallel without sharing a mouse.
 *
 * The stack runs under the run jail: PR_SET_PDEATHSIG ends it with the supervisor, and as the init of
 * its own PID namespace the stack's shell takes every process of the display with it. The run drives
 * the stack's programs (the window manager executes commands bound to keys, from a configuration in the
 * HOME the run can write; the app does what its UI offers), so the stack is confined like a run:
 * Landlock hides Runboard's state from it and lets it write only its own folders, /tmp/.X11-unix
 * (X's sockets) and /var/lib/xkb (X's compiled keymaps), and it may open no TCP connection. So a supervisor crash (even SIGKILL) leaves no Xvfb behind. Xvfb listens on its
 * filesystem socket only (`-nolisten local`: no abstract socket), so a worker whose sandbox scopes
 * abstract unix sockets still reaches it (libxcb falls back to the path when the abstract connect is
 * refused). docs/computer-use.md has the details and the start/teardown figures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

// The stack, as one script run by bash inside the jail. $1: env file, $2: display number, $3: WxHxD,
// then the app's argv. $RUNBOARD_SETUP (the card's `setup:`) runs to its end in $RUNBOARD_SETUP_CWD (the
// run's workspace) before the display is ready: what it starts in the background stays on the display.
// The app runs in the stack's PID namespace, next to the session bus: the pid its X window names
// (_NET_WM_PID) and the pid the bus reports for its accessibility connection are then the same number,
// which is how the addon pairs a window with its accessibility tree.
const STACK = String.raw`
set -u
dir=$(dirname "$1")
pids=()
cleanup() { for ((i=${'$'}{#pids[@]}-1; i>=0; i--)); do kill "${'$'}{pids[i]}" 2>/dev/null; done; wait "${'$'}{pids[@]}" 2>/dev/null; }
trap 'cleanup; exit 0' TERM INT HUP
wait_for() { local n=$(( $1 * 50 )); shift; until "$@" >/dev/null 2>&1; do n=$((n-1)); [ $n -gt 0 ] || return 1; sleep 0.02; done; }
Xvfb ":$2" -screen 0 "$3" -nolisten tcp -nolisten local -noreset -nolock 2>"$dir/xvfb.log" &
pids+=($!)
wait_for 10 sh -c "test -S /tmp/.X11-unix/X$2 || ! kill -0 $!"
kill -0 "${'$'}{pids[0]}" 2>/dev/null || { echo "Xvfb exited: $(cat "$dir/xvfb.log")" >&2; exit 5; }
test -S "/tmp/.X11-unix/X$2" || { echo "Xvfb did not start: $(cat "$dir/xvfb.log")" >&2; exit 4; }
export DISPLAY=":$2"
dbus-daemon --session --nofork --nopidfile --address="unix:path=$dir/bus" 2>"$dir/dbus.log" &
pids+=($!)
export DBUS_SESSION_BUS_ADDRESS="unix:path=$dir/bus"
wait_for 10 test -S "$dir/bus" || { echo "dbus-daemon did not start" >&2; exit 4; }
unset NO_AT_BRIDGE AT_SPI_BUS_ADDRESS
/usr/libexec/at-spi-bus-launcher --launch-immediately 2>"$dir/atspi.log" &
pids+=($!)
wait_for 10 dbus-send --session --print-reply --dest=org.a11y.Bus /org/a11y/bus org.a11y.Bus.GetAddress ||
  { echo "the AT-SPI bus did not start" >&2; exit 4; }
if command -v openbox >/dev/null; then openbox --sm-disable 2>"$dir/openbox.log" & pids+=($!); fi
if [ $# -gt 3 ]; then "${'$'}{@:4}" >"$dir/app.log" 2>&1 & pids+=($!); fi
if [ -n "${'$'}{RUNBOARD_SETUP:-}" ]; then
  (cd "${'$'}{RUNBOARD_SETUP_CWD:-$dir}" && exec sh -c "$RUNBOARD_SETUP") </dev/null >"$dir/setup.log" 2>&1 ||
    { echo "the card's setup exited with $?: $(tail -c 1500 "$dir/setup.log")" >&2; exit 6; }
fi
printf 'DISPLAY=%s\nDBUS_SESSION_BUS_ADDRESS=%s\nREADY=1\n' "$DISPLAY" "$DBUS_SESSION_BUS_ADDRESS" >"$1.tmp"
mv "$1.tmp" "$1"
while :; do sleep 3600 & wait $!; done
`;

export interface DisplayOptions {
  jailPath: string;
  useNamespaces: boolean;
  /** A folder of the run's own (its scratch dir): sockets, logs, the env file. */
  dir: string;
  size?: string | undefined;
  /** A program to start on the display (argv), e.g. the card's app. */
  app?: string[] | undefined;
  baseEnv: NodeJS.ProcessEnv;
  /** Environment of the app (HOME, TMPDIR… of the run). */
  appEnv?: Record<string, string>;
  /** The card's setup command (sh -c), run to its end on the display before it is ready, in `setupCwd`. */
  setup?: string | undefined;
  setupCwd?: string | undefined;
  /** Landlock for the stack: the trees it may not read (Runboard's state). Null: no Landlock here. */
  confine: { hidden: string[] } | null;
  timeoutMs?: number;
}

export interface PrivateDisplay {
  env: { DISPLAY: string; DBUS_SESSION_BUS_ADDRESS: string };
  startMs: number;
  /** Ends the app and the whole stack; resolves with the time it took (ms). */
  stop(): Promise<number>;
}

/**
 * Display numbers are chosen here, not by Xvfb's -displayfd: with only a path socket (see above),
 * concurrent -displayfd servers race for the same number and the loser unlinks the winner's socket.
 * The supervisor takes X's lock file `/tmp/.X<N>-lock` itself (created exclusively, holding its own
 * pid, as X servers write it) before it starts Xvfb with `-nolock`: the confined stack then needs no
 * write access to /tmp, which may hold Runboard's state (tests put it there). Numbers start at 100,
 * away from the ones people and other tools use; this supervisor never hands out one twice.
 */
/** How long a display whose card has a `setup:` may take to be ready, the setup included. */
const SETUP_TIMEOUT_MS = 120_000;

const reserved = new Set<number>();
let nextNumber = 100;
function pickDisplayNumber(): number {
  for (let i = 0; i < 1000; i++) {
    const n = nextNumber;
    nextNumber = nextNumber >= 999 ? 100 : nextNumber + 1;
    if (reserved.has(n)) continue;
    const lock = lockFile(n);
    const socket = `/tmp/.X11-unix/X${n}`;
    if (existsSync(lock) || existsSync(socket)) {
      // A server killed with SIGKILL (e.g. with a crashed supervisor) leaves both behind. A display is
      // live while anyone listens on its socket or the supervisor that locked it lives (the pid of an
      // X server's own lock may be of another PID namespace); a dead display of ours is cleared.
      if (listening(socket) || heldByLive(lock)) continue;
      rmSync(lock, { force: true });
      rmSync(socket, { force: true });
    }
    if (!lockWhole(lock)) continue; // someone took it between our look and our lock
    reserved.add(n);
    return n;
  }
  throw new Error('no free X display number between :100 and :999');
}

const lockFile = (n: number): string => `/tmp/.X${n}-lock`;

/**
 * Takes `lock` with our pid in it, whole: written to a file of our own, then linked into place (as X
 * does). Created then written, another supervisor could read it empty in between, take it for a dead
 * lock (heldByLive), remove it and take the same display number.
 */
function lockWhole(lock: string): boolean {
  const mine = `${lock}.${process.pid}`;
  rmSync(mine, { force: true }); // one left by a killed process of the same pid
  writeFileSync(mine, `${String(process.pid).padStart(10)}\n`, { mode: 0o444 });
  try {
    linkSync(mine, lock);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    rmSync(mine, { force: true });
  }
}

function release(n: number): void {
  reserved.delete(n);
  rmSync(lockFile(n), { force: true });
}

/** The lock's pid is a live process (a supervisor of ours holding it while its display starts). */
function heldByLive(lock: string): boolean {
  try {
    const pid = Number(readFileSync(lock, 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 0) return false;
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function listening(socket: string): boolean {
  try {
    return readFileSync('/proc/net/unix', 'utf8').includes(` ${socket}\n`);
  } catch {
    return true; // cannot tell: leave it alone
  }
}

function jailed(o: DisplayOptions, argv: string[], env: Record<string, string>): ChildProcess {
  const args = ['--parent-pid', String(process.pid)];
  if (o.confine) {
    // X writes its compiled keymaps to /var/lib/xkb when it runs as root (inside the namespace it does).
    const xkb = existsSync('/var/lib/xkb') ? ['/var/lib/xkb'] : [];
    const own = [o.appEnv?.HOME, o.appEnv?.TMPDIR].filter((d): d is string => !!d);
    const writable = new Set([o.dir, '/tmp/.X11-unix', ...xkb, ...own]);
    for (const w of writable) args.push('--write', w);
    for (const h of o.confine.hidden) args.push('--hide', h);
  } else args.push('--no-landlock');
  if (!o.useNamespaces) args.push('--no-namespaces');
  return spawn(o.jailPath, [...args, '--', ...argv], { env, stdio: ['ignore', 'ignore', 'pipe'] });
}

async function end(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((res) => child.once('exit', () => res()));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(t);
}

export async function startPrivateDisplay(o: DisplayOptions): Promise<PrivateDisplay> {
  const t0 = performance.now();
  mkdirSync(o.dir, { recursive: true, mode: 0o700 });
  const envFile = path.join(o.dir, 'display.env');
  rmSync(envFile, { force: true });
  const base: Record<string, string> = {
    PATH: o.baseEnv.PATH || '/usr/local/bin:/usr/bin:/bin',
    LANG: o.baseEnv.LANG || 'C.UTF-8',
    HOME: o.appEnv?.HOME ?? o.dir,
  };
  let stack: ChildProcess | undefined;
  let number = -1;
  for (let attempt = 0; !stack; attempt++) {
    number = pickDisplayNumber();
    const child = jailed(
      o,
      [
        'bash',
        '-c',
        STACK,
        'runboard-display',
        envFile,
        String(number),
        o.size ?? '1280x800x24',
        ...(o.app ?? []),
      ],
      {
        ...base,
        ...(o.appEnv ?? {}),
        ...(o.setup ? { RUNBOARD_SETUP: o.setup, RUNBOARD_SETUP_CWD: o.setupCwd ?? o.dir } : {}),
      },
    );
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    const deadline = Date.now() + (o.timeoutMs ?? (o.setup ? SETUP_TIMEOUT_MS : 20_000));
    for (;;) {
      if (existsSync(envFile) && readFileSync(envFile, 'utf8').includes('READY=1')) {
        stack = child;
        break;
      }
      if (child.exitCode !== null || child.signalCode !== null) {
        release(number);
        // Another X server took the number between our look and Xvfb's lock: take the next one.
        if (child.exitCode === 5 && attempt < 5) break;
        throw new Error(`the private display did not start: ${stderr.trim() || `exit ${child.exitCode}`}`);
      }
      if (Date.now() > deadline) {
        await end(child, 1000);
        release(number);
        throw new Error(
          `the private display did not start in ${o.timeoutMs ?? (o.setup ? SETUP_TIMEOUT_MS : 20_000)} ms: ${stderr.trim()}`,
        );
      }
      await new Promise((r) => setTimeout(r, 15));
    }
  }
  const vars = Object.fromEntries(
    readFileSync(envFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  ) as Record<string, string>;
  const env = { DISPLAY: vars.DISPLAY!, DBUS_SESSION_BUS_ADDRESS: vars.DBUS_SESSION_BUS_ADDRESS! };
  const startMs = performance.now() - t0;
  let stopped: Promise<number> | undefined;
  return {
    env,
    startMs,
    stop() {
      stopped ??= (async () => {
        const t1 = performance.now();
        await end(stack, 3000);
        release(number);
        return performance.now() - t1;
      })();
      return stopped;
    },
  };
}
