/**
 * `runboard supervisor start|status|stop [--force]`. `stop --force` ends the supervisor always: it asks
 * it to cancel its runs and stop, waits for the process to be gone, and after a grace (`--grace`,
 * default 10 s) kills it with SIGKILL, saying so. The process is known by the socket's peer (the
 * kernel's SO_PEERCRED of the listening process), so a supervisor that no longer answers (stopped, or
 * stuck on a full disk: soak 3's, which ignored `stop --force`) is still found and ended.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { parseArgs } from 'node:util';
import type { StatePaths } from '@runboard/supervisor/paths';
import { SupervisorClient, SupervisorUnavailable } from '../core/supervisor-client.ts';

export const SUPERVISOR_USAGE = `supervisor start|status|stop [--force [--grace S]]  the supervisor for this state root (start: for schedules, no board; stop --force: cancel its runs, SIGKILL after S s)`;

/** A mistake in the supervisor command's options. */
export class SupervisorUsageError extends Error {}

const DEFAULT_GRACE_S = 10;

const jsonLine = (obj: unknown): void => void process.stdout.write(JSON.stringify(obj) + '\n');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A process's start time (field 22 of /proc/<pid>/stat), or undefined when it is gone (or a zombie). */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? undefined : fields[19];
  } catch {
    return undefined;
  }
}

/** The pid of the process listening on the supervisor's socket, from the kernel (no answer needed). */
async function socketOwner(paths: StatePaths): Promise<number | undefined> {
  const socket = await new Promise<net.Socket | null>((resolve) => {
    const s = net.connect(paths.socket);
    s.once('connect', () => resolve(s));
    s.once('error', () => resolve(null));
  });
  if (!socket) return undefined;
  try {
    const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
    if (fd === undefined || fd < 0) return undefined;
    const { peerIdentity } = await import('@runboard/native');
    return peerIdentity(fd).pid;
  } catch {
    return undefined;
  } finally {
    socket.destroy();
  }
}

/** Resolves true once `pid` (started at `since`) is gone, false when `ms` pass first. */
async function gone(pid: number, since: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (startTime(pid) !== since) return true;
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
}

/** An answer within `ms`, or undefined (a supervisor that does not answer). */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)));
  try {
    return await Promise.race([p.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

async function forceStop(paths: StatePaths, graceS: number, json: boolean): Promise<number> {
  const pid = await socketOwner(paths);
  const since = pid === undefined ? undefined : startTime(pid);
  if (pid === undefined || since === undefined) {
    if (json) jsonLine({ running: false });
    else process.stdout.write(`no supervisor running for ${paths.root}\n`);
    return 0;
  }
  const graceMs = graceS * 1000;
  // Asked first: its runs end `cancelled` and it removes its socket. A supervisor that does not answer
  // (or does not end) within the grace is killed.
  const asked = (async () => {
    const client = await SupervisorClient.connect(paths);
    try {
      return await client.shutdown(true);
    } finally {
      client.close();
    }
  })();
  const answer = await within(asked, graceMs);
  if (await gone(pid, since, answer ? graceMs : 0)) {
    if (json) jsonLine({ stopped: true, pid, killed: false });
    else process.stdout.write(`supervisor stopped (pid ${pid}); its runs were cancelled\n`);
    return 0;
  }
  try {
    if (startTime(pid) === since) process.kill(pid, 'SIGKILL');
  } catch {
    // gone meanwhile
  }
  const killed = await gone(pid, since, 5000);
  const why = answer ? `did not end within ${graceS} s of being asked` : `did not answer within ${graceS} s`;
  if (!killed) {
    process.stderr.write(
      `runboard: the supervisor (pid ${pid}) ${why} and is still there after SIGKILL (a process stuck in the kernel, state D?); see /proc/${pid}/status\n`,
    );
    return 1;
  }
  if (json) jsonLine({ stopped: true, pid, killed: true });
  else
    process.stdout.write(
      `the supervisor (pid ${pid}) ${why}: killed it (SIGKILL); its runs ended with it and the next supervisor records them as supervisor-died\n`,
    );
  return 0;
}

export async function cmdSupervisor(args: string[], paths: StatePaths): Promise<number> {
  let values, positionals;
  try {
    ({ values, positionals } = parseArgs({
      args,
      options: { force: { type: 'boolean' }, grace: { type: 'string' }, json: { type: 'boolean' } },
      allowPositionals: true,
    }));
  } catch (e) {
    throw new SupervisorUsageError((e as Error).message);
  }
  const sub = positionals[0];
  if (sub !== 'status' && sub !== 'stop' && sub !== 'start')
    throw new SupervisorUsageError('supervisor takes start, status or stop');
  let graceS = DEFAULT_GRACE_S;
  if (values.grace !== undefined) {
    graceS = Number(values.grace);
    if (sub !== 'stop' || !values.force)
      throw new SupervisorUsageError('--grace goes with `supervisor stop --force`');
    if (!/^\d+(\.\d+)?$/.test(values.grace.trim()) || !(graceS > 0) || graceS > 3600)
      throw new SupervisorUsageError(
        `--grace takes the seconds to wait before SIGKILL, more than 0 and at most 3600 (got ${JSON.stringify(values.grace)})`,
      );
  }
  if (sub === 'start') {
    let already = true;
    const client = await SupervisorClient.connect(paths).catch(async (err: unknown) => {
      if (!(err instanceof SupervisorUnavailable)) throw err;
      already = false;
      return SupervisorClient.connect(paths, { autoStart: true });
    });
    const s = await client.status();
    client.close();
    if (values.json) jsonLine({ running: true, started: !already, pid: s.pid });
    else
      process.stdout.write(
        `${already ? 'the supervisor was running already' : 'supervisor started'}: pid ${s.pid}, state ${s.stateRoot}\n` +
          `  it runs scheduled cards of registered projects (runboard init) with no board open; \`runboard schedules\` lists them\n`,
      );
    return 0;
  }
  if (sub === 'stop' && values.force) return forceStop(paths, graceS, values.json === true);
  let client: SupervisorClient;
  try {
    client = await SupervisorClient.connect(paths);
  } catch (err) {
    if (!(err instanceof SupervisorUnavailable)) throw err;
    process.stdout.write(
      values.json ? JSON.stringify({ running: false }) + '\n' : `no supervisor running for ${paths.root}\n`,
    );
    return sub === 'status' ? 3 : 0;
  }
  if (sub === 'status') {
    const s = await client.status();
    if (values.json) jsonLine({ running: true, ...s });
    else {
      const logLine = s.log?.failing
        ? `\n  its log: cannot be written (${s.log.failing}); ${s.log.dropped} line(s) dropped, ${s.log.buffered} bytes held`
        : '';
      process.stdout.write(
        `supervisor ${s.version} pid ${s.pid}, up since ${s.startedAt}\n  state: ${s.stateRoot}\n  socket: ${paths.socket}\n  active runs: ${s.activeRuns}\n  sandbox: ${s.landlockAbi ? `Landlock ABI ${s.landlockAbi}` : `none (${s.landlockReason})`}${logLine}\n`,
      );
    }
    client.close();
    return 0;
  }
  const r = await client.shutdown(false);
  client.close();
  if (!r.stopping) {
    process.stderr.write(
      `the supervisor has ${r.activeRuns} active run(s); \`runboard supervisor stop --force\` cancels them and stops\n`,
    );
    return 1;
  }
  process.stdout.write('supervisor stopping\n');
  return 0;
}
