/**
 * Worker entry point and composition root: one run, then exit.
 * It is started by the supervisor inside the run jail with its run endpoint on fd 3.
 */
import net from 'node:net';
import v8 from 'node:v8';
import { config as zodConfig } from 'zod/mini';
import {
  call,
  connect,
  notify,
  RUN_ENDPOINT_FD,
  RunEnv,
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
  await call(conn, WorkerFinished, redact(outcome));
  clearInterval(heartbeat);
  process.exit(0);
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
