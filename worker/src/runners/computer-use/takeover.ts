/**
 * Takeover on the real display: an Escape the person presses cancels the run; the agent's own
 * synthetic Escape (a desktop_action key) does not.
 *
 * How they are told apart on X11: XInput 2 raw key events carry the *source* device. Everything the
 * addon injects goes through XTest, whose events come from the server's "Virtual core XTEST keyboard"
 * slave; a person's key comes from a real keyboard slave (evdev/libinput, or "Xvfb keyboard"). So the
 * watcher selects XI_RawKeyPress on the root window for all devices and reports an Escape whose
 * sourceid is not an XTEST device. (XRecord cannot do this: it sees XTest events as core events.)
 *
 * Until the desktop addon has a key watcher of its own, the watcher is a small Xlib/XInput2 program in
 * Python (ctypes over libX11/libXi, both present wherever the addon runs), started by the worker.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';

const WATCHER = String.raw`
import ctypes, select, sys
X = ctypes.CDLL('libX11.so.6'); Xi = ctypes.CDLL('libXi.so.6')
X.XOpenDisplay.restype = ctypes.c_void_p
X.XDefaultRootWindow.restype = ctypes.c_ulong
d = ctypes.c_void_p(X.XOpenDisplay(None))
if not d.value:
    print('error cannot open the display', flush=True); sys.exit(2)
maj = ctypes.c_int(2); mi = ctypes.c_int(2)
if Xi.XIQueryVersion(d, ctypes.byref(maj), ctypes.byref(mi)) != 0:
    print('error no XInput 2', flush=True); sys.exit(3)
op = ctypes.c_int(); e1 = ctypes.c_int(); e2 = ctypes.c_int()
X.XQueryExtension(d, b'XInputExtension', ctypes.byref(op), ctypes.byref(e1), ctypes.byref(e2))
class Info(ctypes.Structure):
    _fields_ = [('deviceid', ctypes.c_int), ('name', ctypes.c_char_p), ('use', ctypes.c_int), ('attachment', ctypes.c_int),
                ('enabled', ctypes.c_int), ('num_classes', ctypes.c_int), ('classes', ctypes.c_void_p)]
Xi.XIQueryDevice.restype = ctypes.POINTER(Info)
def names():
    n = ctypes.c_int(); info = Xi.XIQueryDevice(d, 0, ctypes.byref(n))
    out = {info[i].deviceid: info[i].name.decode('utf-8', 'replace') for i in range(n.value)}
    Xi.XIFreeDeviceInfo(info); return out
devs = names()
class Mask(ctypes.Structure):
    _fields_ = [('deviceid', ctypes.c_int), ('mask_len', ctypes.c_int), ('mask', ctypes.POINTER(ctypes.c_ubyte))]
RAW_KEY_PRESS = 13
m = (ctypes.c_ubyte * 4)(); m[RAW_KEY_PRESS >> 3] |= 1 << (RAW_KEY_PRESS & 7)
mask = Mask(0, 4, m)
Xi.XISelectEvents(d, ctypes.c_ulong(X.XDefaultRootWindow(d)), ctypes.byref(mask), 1)
esc = X.XKeysymToKeycode(d, ctypes.c_ulong(0xff1b))
X.XSync(d, 0)
class Cookie(ctypes.Structure):
    _fields_ = [('type', ctypes.c_int), ('serial', ctypes.c_ulong), ('send_event', ctypes.c_int), ('display', ctypes.c_void_p),
                ('extension', ctypes.c_int), ('evtype', ctypes.c_int), ('cookie', ctypes.c_uint), ('data', ctypes.c_void_p)]
class Raw(ctypes.Structure):
    _fields_ = [('type', ctypes.c_int), ('serial', ctypes.c_ulong), ('send_event', ctypes.c_int), ('display', ctypes.c_void_p),
                ('extension', ctypes.c_int), ('evtype', ctypes.c_int), ('time', ctypes.c_ulong), ('deviceid', ctypes.c_int),
                ('sourceid', ctypes.c_int), ('detail', ctypes.c_int), ('flags', ctypes.c_int)]
class Event(ctypes.Union):
    _fields_ = [('cookie', Cookie), ('pad', ctypes.c_long * 24)]
# The HUD: an override-redirect (no WM, never focused), click-through (empty input shape) bar.
hud = None
if len(sys.argv) > 1 and sys.argv[1]:
    text = sys.argv[1].encode('utf-8')
    class Attrs(ctypes.Structure):
        _fields_ = [('background_pixmap', ctypes.c_ulong), ('background_pixel', ctypes.c_ulong), ('border_pixmap', ctypes.c_ulong),
                    ('border_pixel', ctypes.c_ulong), ('bit_gravity', ctypes.c_int), ('win_gravity', ctypes.c_int),
                    ('backing_store', ctypes.c_int), ('backing_planes', ctypes.c_ulong), ('backing_pixel', ctypes.c_ulong),
                    ('save_under', ctypes.c_int), ('event_mask', ctypes.c_long), ('do_not_propagate_mask', ctypes.c_long),
                    ('override_redirect', ctypes.c_int), ('colormap', ctypes.c_ulong), ('cursor', ctypes.c_ulong)]
    scr = X.XDefaultScreen(d)
    sw = X.XDisplayWidth(d, scr)
    w, h = 8 * len(text) + 40, 28
    a = Attrs(); a.background_pixel = 0xB0206A; a.override_redirect = 1; a.event_mask = 1 << 15  # ExposureMask
    X.XCreateWindow.restype = ctypes.c_ulong
    hud = X.XCreateWindow(d, ctypes.c_ulong(X.XDefaultRootWindow(d)), (sw - w) // 2, 0, w, h, 0, 0, 1, None,
                          ctypes.c_ulong((1 << 1) | (1 << 9) | (1 << 11)), ctypes.byref(a))
    Xext = ctypes.CDLL('libXext.so.6')
    Xext.XShapeCombineRectangles(d, ctypes.c_ulong(hud), 2, 0, 0, None, 0, 0, 0)  # ShapeInput, ShapeSet: no input
    X.XDefaultGC.restype = ctypes.c_void_p
    gc = ctypes.c_void_p(X.XDefaultGC(d, scr))
    X.XSetForeground(d, gc, ctypes.c_ulong(0xFFFFFF))
    def draw():
        X.XDrawString(d, ctypes.c_ulong(hud), gc, 20, 18, text, len(text))
    X.XMapRaised(d, ctypes.c_ulong(hud)); X.XSync(d, 0)
print('ready', esc, flush=True)
fd = X.XConnectionNumber(d); ev = Event()
while True:
    while X.XPending(d) == 0:
        r, _, _ = select.select([fd, 0], [], [], 5.0)
        if 0 in r:
            line = sys.stdin.readline()
            if not line: sys.exit(0)
            if hud and line.strip() == 'hide':
                X.XUnmapWindow(d, ctypes.c_ulong(hud)); X.XSync(d, 0)
            elif hud and line.strip() == 'show':
                X.XMapRaised(d, ctypes.c_ulong(hud)); X.XSync(d, 0); draw(); X.XSync(d, 0)
            print('ok ' + line.strip(), flush=True)
    X.XNextEvent(d, ctypes.byref(ev))
    c = ev.cookie
    if hud and c.type == 12:  # Expose
        draw(); X.XFlush(d); continue
    if c.type != 35 or c.extension != op.value or not X.XGetEventData(d, ctypes.byref(ev.cookie)): continue
    raw = ctypes.cast(ev.cookie.data, ctypes.POINTER(Raw)).contents
    if raw.evtype == RAW_KEY_PRESS and raw.detail == esc and raw.deviceid == raw.sourceid:
        name = devs.get(raw.sourceid) or names().get(raw.sourceid, '?')
        print(('agent' if 'XTEST' in name else 'person') + ' ' + str(raw.sourceid) + ' ' + name, flush=True)
    X.XFreeEventData(d, ctypes.byref(ev.cookie))
`;

export interface EscapeWatcher {
  /** Resolves when the watcher listens (or rejects with why it cannot). */
  ready: Promise<void>;
  /** Unmaps the HUD (before a screenshot) / maps it again; resolve once the X server has done it. */
  hideHud(): Promise<void>;
  showHud(): Promise<void>;
  stop(): void;
}

export function watchEscape(
  env: NodeJS.ProcessEnv,
  onEscape: (by: 'person' | 'agent', device: string) => void,
  /** The HUD's text ('' for no HUD). */
  hud = '',
  python = '/usr/bin/python3',
): EscapeWatcher {
  const child: ChildProcess = spawn(python, ['-c', WATCHER, hud], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  const acks: (() => void)[] = [];
  const command = (c: string): Promise<void> =>
    child.exitCode !== null || !child.stdin?.writable
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          acks.push(resolve);
          child.stdin!.write(`${c}\n`);
        });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
  const ready = new Promise<void>((resolve, reject) => {
    child.once('error', (err) => reject(err));
    child.once('exit', (code) => reject(new Error(`the Escape watcher exited (${code}): ${stderr.trim()}`)));
    const rl = readline.createInterface({ input: child.stdout! });
    rl.on('line', (line) => {
      if (line.startsWith('ready')) resolve();
      else if (line.startsWith('ok ')) acks.shift()?.();
      else if (line.startsWith('error')) reject(new Error(line.slice(6)));
      else {
        const [by, , ...name] = line.split(' ');
        if (by === 'person' || by === 'agent') onEscape(by, name.join(' '));
      }
    });
  });
  ready.catch(() => undefined);
  child.once('exit', () => acks.splice(0).forEach((a) => a()));
  return {
    ready,
    hideHud: () => command('hide'),
    showHud: () => command('show'),
    stop() {
      child.stdin?.end(); // the watcher exits when its stdin closes
      child.kill('SIGTERM');
    },
  };
}
