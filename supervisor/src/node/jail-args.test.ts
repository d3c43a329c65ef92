import { describe, expect, it } from 'vitest';
import type { FlowSpec } from '../protocol/index.ts';
import {
  buildJailArgs,
  buildRunEnv,
  projectReadOnly,
  runReadable,
  knownProjectsReadOnly,
  runMemoryBytes,
  runWritable,
  serializeEnv,
  userDisplay,
  type JailArgsInput,
} from './jail-args.ts';
import { readablePath } from './reads.ts';

const flow = (f: Partial<FlowSpec> = {}): FlowSpec => ({ name: 'f', runner: 'command', ...f });
const base = (f: Partial<FlowSpec> = {}, i: Partial<JailArgsInput> = {}): JailArgsInput => ({
  flow: flow(f),
  workspace: '/ws',
  writable: ['/ws', '/scratch/r'],
  hiddenPaths: ['/state'],
  workerArgv: ['node', 'worker.mjs'],
  parentPid: 42,
  landlockAbi: 6,
  useNamespaces: true,
  ...i,
});

describe('runWritable', () => {
  it('gives the workspace (unless read-only), scratch, artifacts and the flow extras', () => {
    expect(
      runWritable({
        flow: flow({ sandbox: { writable: ['/cache'] } }),
        workspace: '/ws',
        scratchDir: '/s',
        artifactsDir: '/l/artifacts',
      }),
    ).toEqual(['/ws', '/s', '/l/artifacts', '/cache']);
    expect(runWritable({ flow: flow({ readOnly: true }), workspace: '/ws', scratchDir: '/s' })).toEqual([
      '/s',
    ]);
  });
});

describe('buildJailArgs', () => {
  it('passes the status fd, parent, writable trees, hidden trees, then the worker after --', () => {
    expect(buildJailArgs(base())).toEqual([
      '--status-fd',
      '4',
      '--parent-pid',
      '42',
      '--env-fd',
      '5',
      '--max-procs',
      '1024',
      '--write',
      '/ws',
      '--write',
      '/scratch/r',
      '--hide',
      '/state',
      '--ro-mounts',
      '--connect',
      '/run/nscd/socket',
      '--connect',
      '/run/systemd/resolve/io.systemd.Resolve',
      '--',
      'node',
      'worker.mjs',
    ]);
  });

  it("limits the run's memory to the flow's sandbox.memory, half the machine's by default", () => {
    expect(buildJailArgs(base({}, { memoryBytes: 512 << 20 })).join(' ')).toContain('--memory 536870912');
    expect(runMemoryBytes(flow(), 8 * 2 ** 30)).toBe(4 * 2 ** 30);
    expect(runMemoryBytes(flow({ sandbox: { memory: '300m' } }), 8 * 2 ** 30)).toBe(300 << 20);
    expect(runMemoryBytes(flow({ sandbox: { memory: '2g' } }), 8 * 2 ** 30)).toBe(2 * 2 ** 30);
    expect(runMemoryBytes(flow({ sandbox: { memory: '10%' } }), 1000 << 20)).toBe(100 << 20);
  });

  it("limits the run's processes to the flow's maxProcesses", () => {
    expect(buildJailArgs(base({ sandbox: { maxProcesses: 64 } })).join(' ')).toContain('--max-procs 64');
  });

  it('asks for a read-only mount namespace and a private /tmp where namespaces are used', () => {
    const a = buildJailArgs(base({}, { privateTmpSize: '512m' })).join(' ');
    expect(a).toContain('--ro-mounts --private-tmp 512m');
    expect(buildJailArgs(base({}, { useNamespaces: false }))).not.toContain('--ro-mounts');
  });

  it('allows the flow ports and the model proxy port, nothing else', () => {
    const a = buildJailArgs(base({ sandbox: { tcpPorts: [8080] } }, { proxyPort: 5555 }));
    expect(a.join(' ')).toContain('--tcp 8080 --tcp 5555');
    expect(buildJailArgs(base())).not.toContain('--tcp');
  });

  it('withholds deletes in the workspace for askDeletes, giving them back in the deletable folders', () => {
    const a = buildJailArgs(
      base({ sandbox: { askDeletes: true, deletable: ['build', 'tmp/x'] } }, { workspaceFd: 6 }),
    );
    expect(a.join(' ')).toContain('--ask-deletes --remove build --remove tmp/x');
    expect(buildJailArgs(base({ sandbox: { deletable: ['build'] } }, { workspaceFd: 6 }))).not.toContain(
      '--remove',
    );
  });

  it('allows UDP only for a flow that asks for it', () => {
    expect(buildJailArgs(base({ sandbox: { udp: true } }))).toContain('--udp');
    expect(buildJailArgs(base({ sandbox: { tcpPorts: [53] } }))).not.toContain('--udp');
  });

  it('masks the user display and runtime dir for a private display, abstract sockets only without one', () => {
    const a = buildJailArgs(
      base({ sandbox: { allowAbstractUnix: true } }, { privateDisplay: ':7', userRuntimeDir: '/run/user/1' }),
    );
    expect(a.join(' ')).toContain('--mask /tmp/.X11-unix --keep /tmp/.X11-unix/X7 --mask /run/user/1');
    expect(a).not.toContain('--allow-abstract-unix');
    expect(buildJailArgs(base({ sandbox: { allowAbstractUnix: true } }))).toContain('--allow-abstract-unix');
    // a runtime dir the run may write (or works in) is not masked
    const w = buildJailArgs(base({}, { privateDisplay: ':7', userRuntimeDir: '/ws' }));
    expect(w.join(' ')).not.toContain('--mask /ws');
  });

  it('picks the agent sandbox mode for codex only, and says when there is no Landlock or no namespaces', () => {
    expect(buildJailArgs(base({ runner: 'codex', sandbox: { agentSandbox: true } }))).toContain(
      '--fs-mounts',
    );
    expect(buildJailArgs(base({ runner: 'codex', sandbox: { agentSandbox: 'auto' } }))).toContain(
      '--fs-mounts-if-possible',
    );
    expect(
      buildJailArgs(base({ runner: 'codex', sandbox: { agentSandbox: 'auto' } }, { useNamespaces: false })),
    ).not.toContain('--fs-mounts-if-possible');
    expect(buildJailArgs(base({ sandbox: { agentSandbox: true } }))).not.toContain('--fs-mounts');
    const none = buildJailArgs(base({}, { landlockAbi: 0, useNamespaces: false }));
    expect(none.slice(-5)).toEqual(['--no-landlock', '--no-namespaces', '--', 'node', 'worker.mjs']);
  });
});

describe('knownProjectsReadOnly', () => {
  it('makes the project files of known projects inside the writable trees read-only, and only those', () => {
    expect(
      knownProjectsReadOnly(
        ['/code/other', '/code', '/elsewhere/p', '/codex', '/code/mine'],
        ['/code/', '/tmp/scratch'],
        { path: '/code/mine/cards/c.md', project: '/code/mine' }, // its own: projectReadOnly's
      ),
    ).toEqual([
      '/code/other/config.yaml',
      '/code/other/cards',
      '/code/other/recordings',
      '/code/config.yaml',
      '/code/cards',
      '/code/recordings',
    ]);
  });
});

describe('buildRunEnv', () => {
  const env = (f: Partial<FlowSpec> = {}, displayEnv?: Record<string, string>) =>
    buildRunEnv({
      flow: flow(f),
      baseEnv: { PATH: '/bin', SECRET: 'x', TZ: 'UTC' },
      runId: 'r1',
      token: 't',
      workspace: '/ws',
      scratchDir: '/s',
      nativeDir: '/n',
      displayEnv,
    });

  it('is built from nothing but PATH, LANG, TZ of the supervisor, the scratch dirs and the run identity', () => {
    const e = env();
    expect(e.SECRET).toBeUndefined();
    expect(e).toMatchObject({
      PATH: '/bin',
      LANG: 'C.UTF-8',
      TZ: 'UTC',
      HOME: '/s/home',
      TMPDIR: '/s/tmp',
      RUNBOARD_RUN_ID: 'r1',
      RUNBOARD_RUN_TOKEN: 't',
      RUNBOARD_WORKSPACE: '/ws',
    });
    expect(e.RUNBOARD_NATIVE_DIR).toBeUndefined();
  });

  it('adds the flow env, and the private display wins over it', () => {
    const e = env(
      { runner: 'computer-use', env: { DISPLAY: ':0', FOO: '1' }, computerUse: { app: ['x'] } },
      {
        DISPLAY: ':9',
      },
    );
    expect(e).toMatchObject({
      DISPLAY: ':9',
      FOO: '1',
      RUNBOARD_DISPLAY_APP: '1',
      RUNBOARD_NATIVE_DIR: '/n',
    });
  });
});

describe('serializeEnv', () => {
  it('gives NUL-separated NAME=VALUE entries', () => {
    expect(serializeEnv({ A: '1', B: 'x=y' }).toString()).toBe('A=1\0B=x=y\0');
  });
});

describe('projectReadOnly', () => {
  it("keeps the card's project config and cards read-only unless the flow allows writing them", () => {
    const card = { path: '/p/cards/a.md', project: '/p' };
    expect(projectReadOnly(card, flow())).toEqual(['/p/config.yaml', '/p/cards', '/p/recordings']);
    expect(projectReadOnly({ path: '/q/cards/a.md' }, flow())).toEqual([
      '/q/config.yaml',
      '/q/cards',
      '/q/recordings',
    ]);
    expect(projectReadOnly({ path: '/q/a.md' }, flow())).toEqual([]);
    expect(projectReadOnly(card, flow({ sandbox: { projectWritable: true } }))).toEqual([]);
  });
});

describe('the open workspace', () => {
  it('gives the workspace as --write-fd when the jail gets it open, other trees by path', () => {
    const a = buildJailArgs(base({}, { workspaceFd: 6 })).join(' ');
    expect(a).toContain('--write-fd 6 --write /scratch/r');
    expect(a).not.toContain('--write /ws');
  });
});

describe("the run's output", () => {
  it('hands the jail the log files when given (it records the output), none otherwise', () => {
    expect(buildJailArgs(base({}, { outputFds: [7, 8, 9] })).join(' ')).toContain('--output-fds 7,8,9');
    expect(buildJailArgs(base({})).join(' ')).not.toContain('--output-fds');
  });
});

describe('reads as an allow-list', () => {
  const card = { path: '/p/cards/c.md', title: 'c' };
  it("gives the system and install trees, the workspace, card, prompt and the flow's sandbox.read", () => {
    const f = flow({ prompt: '/prompts/x', sandbox: { read: ['/data'] } });
    expect(runReadable({ base: ['/usr', '/app'], flow: f, workspace: '/ws', card })).toEqual([
      '/usr',
      '/app',
      '/ws',
      '/p/cards/c.md',
      '/p/cards/c',
      '/prompts/x',
      '/data',
    ]);
    const reflect = runReadable({ base: [], flow: flow({ runner: 'reflect' }), workspace: '/ws', card });
    expect(reflect).toContain('/p/recordings');
    const args = buildJailArgs(base({}, { readable: ['/usr', '/ws'] }));
    expect(args.join(' ')).toContain('--read /usr --read /ws');
  });

  it("gives the X socket folder to desktop runs only, the bus sockets of the person's runtime dir to a user-display run", () => {
    const plain = runReadable({
      base: [],
      flow: flow(),
      workspace: '/ws',
      card,
      userRuntimeDir: '/run/user/1',
    });
    expect(plain).toEqual(['/ws', '/p/cards/c.md', '/p/cards/c']);
    const priv = runReadable({ base: [], flow: flow(), workspace: '/ws', card, privateDisplay: true });
    expect(priv).toContain('/tmp/.X11-unix');
    const user = runReadable({
      base: [],
      flow: flow(),
      workspace: '/ws',
      card,
      userDisplay: ':3',
      userRuntimeDir: '/run/user/1',
      userHome: '/home/me',
    });
    // an allow-list of entries, never the folder (decision 122): the default session bus, the display's
    // AT-SPI bus, the spread budget's folder
    expect(user).toEqual([
      '/ws',
      '/p/cards/c.md',
      '/p/cards/c',
      '/tmp/.X11-unix',
      '/run/user/1/bus',
      '/run/user/1/at-spi/bus_3',
      '/run/user/1/runboard-atspi',
      '/home/me/.cache/at-spi/bus_3',
    ]);
    // a screen in the flow's DISPLAY: at-spi-bus-launcher names the bus by its own DISPLAY, as written
    const screen = flow({ env: { DISPLAY: ':3.0' } });
    expect(
      runReadable({
        base: [],
        flow: screen,
        workspace: '/ws',
        card,
        userDisplay: ':3',
        userRuntimeDir: '/r',
      }),
    ).toEqual([
      '/ws',
      '/p/cards/c.md',
      '/p/cards/c',
      '/tmp/.X11-unix',
      '/r/bus',
      '/r/at-spi/bus_3',
      '/r/at-spi/bus_3.0',
      '/r/runboard-atspi',
    ]);
    // the session bus the flow names replaces the folder's default one
    const bus = flow({
      env: { DBUS_SESSION_BUS_ADDRESS: 'unix:path=/tmp/s/bus,guid=1', XDG_RUNTIME_DIR: '/run/user/2' },
    });
    expect(
      runReadable({
        base: [],
        flow: bus,
        workspace: '/ws',
        card,
        userDisplay: ':0',
        userRuntimeDir: '/run/user/1',
      }),
    ).toEqual([
      '/ws',
      '/p/cards/c.md',
      '/p/cards/c',
      '/tmp/.X11-unix',
      '/run/user/2/at-spi/bus_0',
      '/run/user/2/runboard-atspi',
      '/tmp/s/bus',
    ]);
  });

  it("reaches the person's display only for a desktop flow without a private display that names it", () => {
    expect(userDisplay(flow({ env: { DISPLAY: ':0' } }))).toBeUndefined();
    expect(userDisplay(flow({ desktop: true, env: { DISPLAY: ':3.0' } }))).toBe(':3');
    expect(userDisplay(flow({ runner: 'computer-use', env: { DISPLAY: ':5' } }))).toBe(':5');
    expect(
      userDisplay(
        flow({ runner: 'computer-use', env: { DISPLAY: ':5' }, computerUse: { privateDisplay: true } }),
      ),
    ).toBeUndefined();
    expect(userDisplay(flow({ desktop: true, env: { DISPLAY: 'otherhost:0' } }))).toBeUndefined();
    const args = buildJailArgs(base({ sandbox: { allowAbstractUnix: true } }, { userDisplay: ':5' })).join(
      ' ',
    );
    expect(args).toContain('--mask /tmp/.X11-unix --keep /tmp/.X11-unix/X5');
    expect(args).toContain('--allow-abstract-unix');
    expect(args).not.toContain('--abstract-absent');
    // without allowAbstractUnix the jail answers a refused abstract connect as nobody there, so X clients
    // take the display's path socket (decision 134)
    const scoped = buildJailArgs(base({}, { userDisplay: ':5' }));
    expect(scoped).toContain('--abstract-absent');
    expect(scoped).not.toContain('--allow-abstract-unix');
    expect(buildJailArgs(base({}))).not.toContain('--abstract-absent');
  });

  it("drops from the run's PATH the folders it cannot read", () => {
    expect(readablePath('/root/.pyenv/shims:/usr/local/bin:/usr/bin:relative:/bin', ['/usr', '/bin'])).toBe(
      '/usr/local/bin:/usr/bin:/bin',
    );
  });
});
