/**
 * Worker entry point and composition root: one run, then exit.
 * It is started by the supervisor inside the run jail with its run endpoint on fd 3.
 */
import net from 'node:net';
import path from 'node:path';
import v8 from 'node:v8';
import { config as zodConfig } from 'zod/mini';
import {
  call,
  connect,
  notify,
  RUN_ENDPOINT_FD,
  RunEnv,
  WorkerAsk,
  WorkerFinished,
  WorkerHeartbeat,
  WorkerLog,
  WorkerProgress,
  WorkerReady,
} from '@runboard/supervisor/protocol';
import { CommandRunner } from './runners/command.ts';
import { loadRunner } from './runners/load.ts';
import type { Runner, RunnerContext, RunnerOutcome } from './runners/runner.ts';
import { redactor } from './redact.ts';

const VERSION = '0.1.0';
const runners: Partial<Record<string, () => Runner>> = {
  command: () => new CommandRunner(),
  // Bundles of their own, loaded on demand (runners/load.ts): model SDKs and the desktop addon.
  codex: () => loadRunner('codex', 'CodexRunner'),
  claude: () => loadRunner('claude', 'ClaudeRunner'),
  'computer-use': () => loadRunner('computer-use', 'ComputerUseRunner'),
  extract: () => loadRunner('extract', 'ExtractRunner'),
  judge: () => loadRunner('judge', 'JudgeRunner'),
  replay: () => loadRunner('replay', 'ReplayRunner'),
  reflect: () => loadRunner('reflect', 'ReflectRunner'),
};

async function main(): Promise<void> {
  // A worker parses a handful of messages once: compiling validators (zod's JIT) would cost more than it saves.
  zodConfig({ jitless: true });
  const runId = process.env[RunEnv.runId] ?? '';
  const token = process.env[RunEnv.token] ?? '';
  const toolEnv: NodeJS.ProcessEnv = { ...process.env };
  delete toolEnv[RunEnv.token]; // the run's tools never hold the endpoint token

  const socket = new net.Socket({ fd: RUN_ENDPOINT_FD, readable: true, writable: true });
  const conn = connect(socket, socket, { close: () => socket.destroy() });
  // The supervisor gone means the run is over (the jail's parent-death signal ends us too).
  conn.onClose(() => process.exit(70));
  conn.listen();

  const spec = await call(conn, WorkerReady, { runId, token, pid: process.pid, version: VERSION });
  const heartbeat = setInterval(
    () => void notify(conn, WorkerHeartbeat, { at: Date.now() }),
    spec.heartbeatIntervalMs,
  );

  // Asks that wait (docs/security-model.md): the run's tools ask here before the act; the supervisor answers.
  const asks = serveAsks(conn, toolEnv);

  // A replay's sensitive parameter values never leave the worker in what it reports (redact.ts).
  const redact = redactor(spec.secrets);
  const make = runners[spec.runner];
  let outcome: RunnerOutcome;
  let runner: Runner | undefined;
  let unavailable = make ? '' : `runner "${spec.runner}" is not available in this version of Runboard`;
  try {
    runner = make?.();
  } catch (err) {
    unavailable = `runner "${spec.runner}" could not be loaded: ${(err as Error).message}`;
  }
  if (!runner) {
    outcome = { status: 'failed', exitCode: null, summary: unavailable, metrics: {} };
  } else {
    let stopping = false;
    for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
      process.on(sig, () => {
        if (stopping) return;
        stopping = true;
        void notify(conn, WorkerLog, { level: 'info', message: `worker received ${sig}; stopping the run` });
        runner?.cancel();
      });
    }
    const ctx: RunnerContext = {
      spec,
      env: toolEnv,
      progress: (fraction, message) =>
        void notify(conn, WorkerProgress, { fraction, message: redact(message) }),
      log: (level, message, data) => void notify(conn, WorkerLog, redact({ level, message, data })),
    };
    try {
      outcome = await runner.run(ctx);
    } catch (err) {
      outcome = {
        status: 'failed',
        exitCode: null,
        summary: `runner error: ${(err as Error).message}`,
        metrics: {},
      };
    }
  }
  asks?.close();
  await call(conn, WorkerFinished, redact(outcome));
  clearInterval(heartbeat);
  process.exit(0);
}

/**
 * The run's ask socket (RunEnv.askSocket, in the run's scratch or its private /tmp): one JSON line per
 * ask each way, forwarded to the supervisor (worker/ask), which decides and may wait for the person.
 */
function serveAsks(conn: Parameters<typeof call>[0], toolEnv: NodeJS.ProcessEnv): net.Server | undefined {
  const dirs = [process.env.TMPDIR, '/tmp'].filter((d): d is string => !!d);
  const at = dirs.map((d) => path.join(d, `rb-ask-${process.pid}.sock`)).find((p) => p.length < 100);
  if (!at) return undefined;
  const server = net.createServer((s) => {
    let buf = '';
    s.setEncoding('utf8');
    s.on('error', () => undefined);
    s.on('data', (chunk: string) => {
      buf += chunk;
      if (buf.length > 65_536) return void s.destroy();
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        void (async () => {
          let answer: { decision: 'allow' | 'deny'; message: string };
          try {
            answer = await call(conn, WorkerAsk, JSON.parse(line) as never);
          } catch (err) {
            answer = { decision: 'deny', message: `Runboard could not ask: ${(err as Error).message}` };
          }
          s.write(JSON.stringify(answer) + '\n');
        })();
      }
    });
  });
  server.on('error', () => undefined);
  server.listen(at);
  toolEnv[RunEnv.askSocket] = at;
  return server;
}

function start(): void {
  if (process.env.RUNBOARD_WORKER_PROBE === '1') {
    process.stdout.write('runboard-worker-ok\n'); // the supervisor checks that a start-up snapshot loads
    return;
  }
  main().catch((err: unknown) => {
    process.stderr.write(`runboard worker: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(70);
  });
}

// Built into a V8 start-up snapshot (scripts/bundle.mjs), the worker's code is already loaded when a
// run starts: `start` runs when the snapshot is deserialised. Run as a plain script, it starts now.
if (v8.startupSnapshot?.isBuildingSnapshot()) v8.startupSnapshot.setDeserializeMainFunction(start);
else start();
