/**
 * `runboard`: the headless CLI over the same host core the Electron app uses. Composition root of the
 * CLI process. Exit codes (docs/user-guide.md): 0 succeeded, 1 failed, 2 bad input or usage,
 * 3 needs input, 4 timed out, 69 supervisor unavailable, 130 cancelled.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { parseArgs } from 'node:util';
import { GrantError } from '@runboard/supervisor/grants';
import { statePaths } from '@runboard/supervisor/paths';
import { readOutputInOrder } from '@runboard/supervisor/run-output';
import {
  ExitCodeForStatus,
  formatWorkflowProblems,
  ResponseError,
  RunId,
  workflowFileFor,
  type RunEvent,
  type RunResult,
} from '@runboard/supervisor/protocol';
import { GrantStore } from '../core/grant-store.ts';
import { launchRequest, NoGrantError } from '../core/launch.ts';
import { loadCard, loadConfig, ProjectError, type Card } from '../core/project.ts';
import { settleSucceededRun } from '../core/workflow-store.ts';
import { SupervisorClient, SupervisorUnavailable } from '../core/supervisor-client.ts';
import { cmdExtract, EXTRACT_USAGE, ExtractUsageError } from './extract.ts';
import { cmdConfig, CONFIG_USAGE } from './config.ts';
import { runsOnDisk } from './runs-on-disk.ts';
import { cmdFleet, FLEET_USAGE, FleetUsageError } from './fleet.ts';
import { cmdGc, GC_USAGE, GcUsageError } from './gc.ts';
import { cmdRecord, RECORD_USAGE, RecordUsageError } from './record.ts';
import { cmdSchedules, SCHEDULES_USAGE, SchedulesUsageError } from './schedules.ts';
import { cmdServe, SERVE_USAGE } from './serve.ts';
import { cmdInit, INIT_USAGE, InitUsageError } from './init.ts';
import { AnswerUsageError, ANSWER_USAGE, cmdAnswer, liveAskText } from './answer.ts';
import { findProjectDir, NotHereError } from './project-dir.ts';
import { cmdSupervisor, SUPERVISOR_USAGE, SupervisorUsageError } from './supervisor-cmd.ts';
import { costText } from '../shared/usage-text.ts';
import hostPackage from '../../package.json' with { type: 'json' };

const EXIT = { usage: 2, unavailable: 69 } as const;
const USAGE = `usage: runboard <command> [options]   (runboard <command> --help: that command's help)

  ${INIT_USAGE}
  run <card.md> [--project DIR] [--json]   run a card now, streaming its output; exit code from its status
  runs [--active] [--json]                 list runs, newest first
  logs <run-id> [-f] [--json]              print a run's output (-f: follow until it ends)
  cancel <run-id>                          cancel a run (idempotent) and wait until it has stopped
  ${ANSWER_USAGE}
  grant <dir>                              grant runs access to a folder (and nothing outside it)
  keep <run-id>                            merge a run's worktree branch into its base branch
  discard <run-id>                         remove a run's worktree and branch
  key set <provider>                       store a provider key (read from stdin) with the supervisor
  key rm <provider> | key list             remove a key; list providers (never shows keys)
  key check <provider>                     ask the provider whether it accepts the stored key
  ${SUPERVISOR_USAGE}
  ${SERVE_USAGE}
  ${RECORD_USAGE}
  ${EXTRACT_USAGE}
  ${SCHEDULES_USAGE}
  ${CONFIG_USAGE}
  ${FLEET_USAGE}
  ${GC_USAGE}

  --version                                this Runboard's version

State lives in $RUNBOARD_HOME (default: the XDG data dir). See docs/user-guide.md.`;

/** The help of one command: its lines of USAGE (with their continuation lines), or undefined. */
function helpOf(command: string): string | undefined {
  const out: string[] = [];
  let mine = false;
  for (const line of USAGE.split('\n').slice(1)) {
    const text = line.trim();
    if (!text) {
      mine = false;
      continue;
    }
    if (!/^ {6,}/.test(line)) mine = text === command || text.startsWith(`${command} `);
    if (mine) out.push(line);
  }
  return out.length ? `usage: runboard\n${out.join('\n')}` : undefined;
}

/** A mistake in how a command was called: printed with that command's usage line, not the whole help. */
class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
  }
}

/** The usage line(s) of `command` from USAGE (and the sub-usages), or undefined. */
function usageOf(command: string | undefined): string | undefined {
  if (!command) return undefined;
  const lines = USAGE.split('\n')
    .map((l) => l.trim().split(/\s{2,}/)[0]!)
    .filter((l) => l.startsWith(`${command} `) || l === command);
  return lines.length ? lines.map((l) => `usage: runboard ${l}`).join('\n') : undefined;
}

/** The run id given, or a usage error saying what a run id looks like. */
function runIdArg(command: string, given: string): string {
  if (!RunId.safeParse(given).success)
    throw new UsageError(
      `"${given}" is not a run id: run ids look like 20250101-120000-0a1b2c (\`runboard runs\` lists them)`,
      command,
    );
  return given;
}

const paths = statePaths();
const tty = process.stderr.isTTY === true;
const dim = (s: string): string => (tty ? `\x1b[2m${s}\x1b[0m` : s);

function jsonLine(obj: unknown): void {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

/** A refusal as a JSON line: what kind (to act on) and the message (to show). */
function errorLine(err: unknown): Record<string, unknown> {
  const message = (err as Error).message ?? String(err);
  if (err instanceof NoGrantError)
    return { type: 'error', error: 'no-grant', workspace: err.workspace, message };
  if (err instanceof GrantError) return { type: 'error', error: 'grant', message };
  if (err instanceof ProjectError || err instanceof UsageError)
    return { type: 'error', error: 'project', message };
  if (err instanceof SupervisorUnavailable)
    return { type: 'error', error: 'supervisor-unavailable', message };
  if (err instanceof ResponseError) return { type: 'error', error: 'refused', code: err.code, message };
  return { type: 'error', error: 'failed', message };
}

function cardProjectDir(cardFile: string, given: string | undefined): string {
  if (given !== undefined) return findProjectDir(given);
  if (!existsSync(cardFile))
    throw new NotHereError(
      `there is no card ${path.resolve(cardFile)} (cards are the .md files in a project's cards/)`,
    );
  try {
    return findProjectDir(undefined, path.dirname(path.resolve(cardFile)));
  } catch {
    throw new NotHereError(
      `${cardFile} is in no Runboard project (no config.yaml above it): \`runboard init\` makes one, or pass --project DIR`,
    );
  }
}

function describeEvent(e: RunEvent): string {
  const frac = typeof e.data?.fraction === 'number' ? ` ${Math.round(e.data.fraction * 100)}%` : '';
  return `▸ ${e.type}${frac}${e.message ? `: ${e.message}` : ''}`;
}

function describeResult(r: RunResult): string {
  const secs = r.durationMs !== null ? `${(r.durationMs / 1000).toFixed(2)}s` : '';
  // a run that was stopped (cancelled, timed out) has a signal and no exit code: no "(exit -)"
  const how = [r.exitCode !== null && r.exitCode !== undefined ? `exit ${r.exitCode}` : '', r.signal ?? '']
    .filter(Boolean)
    .join(', ');
  return `${r.status} in ${secs}${how ? ` (${how})` : ''} — ${r.termination?.reason}: ${r.termination?.detail}`;
}

/** Streams an attached run to this terminal (or as JSON lines); resolves with the final result. */
function follow(client: SupervisorClient, runId: string, json: boolean): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    client
      .attach(runId, {
        onEvent: (e, ask = liveAskText(runId, e)) =>
          json
            ? jsonLine({ type: 'event', runId, event: e })
            : (tty || ask) && process.stderr.write((ask ?? dim(describeEvent(e))) + '\n'),
        ...(json
          ? { onOutput: (stream, data) => jsonLine({ type: 'output', runId, stream, data }) }
          : {
              onBytes: (stream, bytes) =>
                (stream === 'stdout' ? process.stdout : process.stderr).write(bytes),
            }),
        onEnd: resolve,
      })
      .catch(reject);
  });
}

async function cmdRun(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { project: { type: 'string' }, json: { type: 'boolean' } },
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new UsageError('run takes one card file', 'run');
  const cardFile = positionals[0]!;
  let launched;
  let client: SupervisorClient;
  let card: Card;
  try {
    const projectDir = cardProjectDir(cardFile, values.project);
    const config = loadConfig(projectDir);
    card = loadCard(cardFile, projectDir);
    const request = launchRequest(card, config, projectDir, new GrantStore(paths));
    client = await SupervisorClient.connect(paths, { autoStart: true });
    launched = await client.launch(request);
  } catch (err) {
    // with --json a program reads stdout: the refusal is a JSON line too (and the text on stderr)
    if (values.json) jsonLine(errorLine(err));
    throw err;
  }
  const { runId, logDir } = launched;
  if (values.json) jsonLine({ type: 'run', runId, logDir });
  else if (tty) process.stderr.write(dim(`run ${runId} (logs: ${logDir})`) + '\n');
  let interrupts = 0;
  process.on('SIGINT', () => {
    if (++interrupts > 1) process.exit(130);
    if (tty) process.stderr.write(dim('\n▸ cancelling (Ctrl-C again to detach)…') + '\n');
    void client.cancel(runId);
  });
  const result = await follow(client, runId, values.json ?? false);
  client.close();
  // As the board's scheduler does: a reflect run's workflow joins the card (valid, whole) or the run failed.
  const installed = result.status === 'succeeded' ? settleSucceededRun(card.file, result) : undefined;
  if (values.json)
    jsonLine({
      type: 'result',
      runId,
      result,
      ...(installed
        ? { workflow: installed.ok ? workflowFileFor(card.file) : { problems: installed.problems } }
        : {}),
    });
  else process.stderr.write(`${result.status === 'succeeded' ? '✓' : '✗'} ${describeResult(result)}\n`);
  if (installed && !installed.ok) {
    process.stderr.write(
      `✗ the workflow the run made was not saved into the card:\n${formatWorkflowProblems(installed.problems)}\n`,
    );
    return 1;
  }
  if (installed?.ok && !values.json) process.stderr.write(`workflow saved: ${workflowFileFor(card.file)}\n`);
  return ExitCodeForStatus[result.status as Exclude<RunResult['status'], 'running'>] ?? 1;
}

async function cmdRuns(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { json: { type: 'boolean' }, active: { type: 'boolean' }, limit: { type: 'string' } },
  });
  const o = { activeOnly: values.active ?? false, limit: Number(values.limit ?? 50) };
  // Listing never starts a supervisor: one started here would first end the runs left marked active
  // (a dead fleet host's state, looked at after the fact), so where none runs, the files are read.
  const client = await SupervisorClient.connect(paths).catch((err: unknown) => {
    if (err instanceof SupervisorUnavailable) return undefined;
    throw err;
  });
  let runs: RunResult[];
  let stranded = new Map<string, number>();
  if (client) {
    ({ runs } = await client.list(o));
    client.close();
  } else {
    ({ runs, stranded } = runsOnDisk(paths, o));
    process.stderr.write(
      `runboard: no supervisor is running for ${paths.root}: its runs as their files record them (nothing was started)` +
        (stranded.size
          ? `; ${stranded.size} marked running (*) were going when their supervisor (pid ${[...new Set(stranded.values())].join(', ')}) stopped: \`runboard supervisor start\` records how they ended`
          : '') +
        '\n',
    );
  }
  if (values.json) {
    for (const r of runs) jsonLine(r);
    return 0;
  }
  if (runs.length === 0) {
    process.stdout.write(values.active ? 'no runs going\n' : 'no runs yet\n');
    return 0;
  }
  const rows = runs.map((r) => [
    r.runId,
    stranded.has(r.runId) ? `${r.status}*` : r.status,
    r.flow,
    r.durationMs !== null ? `${(r.durationMs / 1000).toFixed(1)}s` : '…',
    r.usage ? (r.usage.inputTokens + r.usage.outputTokens).toLocaleString('en-US') : '-',
    r.usage ? costText(r.usage) : '-',
    r.card.title ?? path.basename(r.card.path),
  ]);
  const head = ['RUN', 'STATUS', 'FLOW', 'TIME', 'TOKENS', 'COST', 'CARD'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const r of [head, ...rows])
    process.stdout.write(r.map((c, i) => (i < r.length - 1 ? c.padEnd(widths[i]!) : c)).join('  ') + '\n');
  return 0;
}

async function cmdLogs(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { follow: { type: 'boolean', short: 'f' }, json: { type: 'boolean' } },
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new UsageError('logs takes one run id', 'logs');
  const runId = runIdArg('logs', positionals[0]!);
  const client = await SupervisorClient.connect(paths, { autoStart: true });
  if (values.follow) {
    const result = await follow(client, runId, values.json ?? false);
    if (values.json) jsonLine({ type: 'result', runId, result });
    else if (tty) process.stderr.write(dim(describeResult(result)) + '\n');
    client.close();
    return 0;
  }
  const { runs } = await client.list({ limit: 10_000 });
  client.close();
  const run = runs.find((r) => r.runId === runId);
  if (!run) throw new UsageError(`no run ${runId} (see \`runboard runs\`)`);
  // stdout and stderr interleaved as the supervisor recorded them (output.order), each to its own fd
  const decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
  await readOutputInOrder(run.logDir, async (stream, data) => {
    if (values.json) {
      const text = decoders[stream].write(data);
      if (text) jsonLine({ type: 'output', runId, stream, data: text });
      return;
    }
    const out = stream === 'stdout' ? process.stdout : process.stderr;
    if (!out.write(data)) await new Promise((r) => out.once('drain', r));
  });
  for (const stream of ['stdout', 'stderr'] as const) {
    const rest = decoders[stream].end();
    if (values.json && rest) jsonLine({ type: 'output', runId, stream, data: rest });
  }
  if (values.json) jsonLine({ type: 'result', runId, result: run });
  return 0;
}

async function cmdCancel(args: string[]): Promise<number> {
  const { positionals } = parseArgs({ args, allowPositionals: true });
  if (positionals.length !== 1) throw new UsageError('cancel takes one run id', 'cancel');
  const runId = runIdArg('cancel', positionals[0]!);
  const client = await SupervisorClient.connect(paths, { autoStart: true });
  const started = Date.now();
  const r = await client.cancel(runId);
  if (r.alreadyEnded) {
    process.stdout.write(`run ${runId} had already ended: ${r.status}\n`);
    client.close();
    return 0;
  }
  const final = await new Promise<RunResult>((resolve, reject) => {
    client
      .attach(
        runId,
        { onEnd: resolve },
        { events: Number.MAX_SAFE_INTEGER, stdout: Number.MAX_SAFE_INTEGER, stderr: Number.MAX_SAFE_INTEGER },
      )
      .catch(reject);
  });
  process.stdout.write(`run ${runId} ${final.status} after ${Date.now() - started} ms\n`);
  client.close();
  return 0;
}

async function cmdWorktree(how: 'keep' | 'discard', args: string[]): Promise<number> {
  const { positionals } = parseArgs({ args, allowPositionals: true });
  if (positionals.length !== 1) throw new UsageError(`${how} takes one run id`, how);
  runIdArg(how, positionals[0]!);
  const client = await SupervisorClient.connect(paths, { autoStart: true });
  const { run } =
    how === 'keep'
      ? await client.keepWorktree(positionals[0]!)
      : await client.discardWorktree(positionals[0]!);
  const wt = run.worktree!;
  process.stdout.write(
    how === 'keep'
      ? `kept: ${wt.branch} merged into ${wt.baseBranch}${wt.mergeCommit ? ` (${wt.mergeCommit.slice(0, 12)})` : ' (no changes)'}\n`
      : `discarded ${wt.path} and branch ${wt.branch}\n`,
  );
  client.close();
  return 0;
}

async function cmdKey(args: string[]): Promise<number> {
  const { positionals } = parseArgs({ args, allowPositionals: true });
  const [sub, provider] = positionals;
  const client = await SupervisorClient.connect(paths, { autoStart: true });
  try {
    if (sub === 'list') {
      const { providers } = await client.listProviders();
      for (const p of providers)
        process.stdout.write(`${p.name}\t${p.hasKey ? 'key set' : 'no key'}\t${p.baseUrl}\n`);
      return 0;
    }
    if (sub === 'check' && provider) {
      const r = await client.checkProviderKey(provider);
      // no answer from the provider (offline, no key stored): the key was not judged, so not "not accepted"
      const verdict = r.ok ? 'key accepted' : r.status === undefined ? 'key not checked' : 'key not accepted';
      process.stdout.write(`${provider}: ${verdict}: ${r.message}\n`);
      return r.ok ? 0 : 1;
    }
    if ((sub !== 'set' && sub !== 'rm') || !provider)
      throw new UsageError('key takes set <provider>, rm <provider>, check <provider> or list', 'key');
    let key: string | null = null;
    if (sub === 'set') {
      if (process.stdin.isTTY) process.stderr.write(`paste the ${provider} key, then Enter and Ctrl-D:\n`);
      key = readFileSync(0, 'utf8').trim();
      if (!key)
        throw new UsageError('no key on stdin (e.g. printenv OPENAI_API_KEY | runboard key set openai)');
    }
    const r = await client.setProviderKey(provider, key);
    process.stdout.write(`${provider}: ${r.hasKey ? 'key stored' : 'no key'}\n`);
    return 0;
  } finally {
    client.close();
  }
}

function cmdGrant(args: string[]): number {
  const { positionals } = parseArgs({ args, allowPositionals: true });
  if (positionals.length !== 1) throw new UsageError('grant takes one folder', 'grant');
  const g = new GrantStore(paths).grant(positionals[0]!);
  process.stdout.write(`granted ${g.path} (grant ${g.id})\n`);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === '--version' || cmd === '-V' || cmd === 'version') {
    process.stdout.write(`runboard ${hostPackage.version}\n`);
    return 0;
  }
  // `runboard <command> --help`: that command's help (parseArgs would call --help an unknown option)
  if (cmd && cmd !== 'help' && (rest.includes('--help') || rest.includes('-h'))) {
    const help = helpOf(cmd);
    if (!help) throw new UsageError(`unknown command "${cmd}"`);
    process.stdout.write(`${help}\n\nSee docs/user-guide.md; \`runboard help\` lists every command.\n`);
    return 0;
  }
  switch (cmd) {
    case 'init':
      return cmdInit(rest, paths).catch((e: unknown) => {
        throw e instanceof InitUsageError ? new NotHereError(e.message) : e;
      });
    case 'run':
      return cmdRun(rest);
    case 'runs':
      return cmdRuns(rest);
    case 'logs':
      return cmdLogs(rest);
    case 'cancel':
      return cmdCancel(rest);
    case 'answer':
      return cmdAnswer(rest, paths).catch((e: unknown) => {
        throw e instanceof AnswerUsageError ? new UsageError(e.message, 'answer') : e;
      });
    case 'grant':
      return cmdGrant(rest);
    case 'keep':
    case 'discard':
      return cmdWorktree(cmd, rest);
    case 'key':
      return cmdKey(rest);
    case 'supervisor':
      return cmdSupervisor(rest, paths).catch((e: unknown) => {
        throw e instanceof SupervisorUsageError ? new UsageError(e.message, 'supervisor') : e;
      });
    case 'serve':
      return cmdServe(rest, paths);
    case 'record':
      return cmdRecord(rest).catch((e: unknown) => {
        throw e instanceof RecordUsageError ? new UsageError(e.message) : e;
      });
    case 'extract':
      return cmdExtract(rest, paths).catch((e: unknown) => {
        throw e instanceof ExtractUsageError ? new UsageError(e.message, 'extract') : e;
      });
    case 'schedules':
      return cmdSchedules(rest, paths).catch((e: unknown) => {
        throw e instanceof SchedulesUsageError ? new UsageError(e.message, 'schedules') : e;
      });
    case 'config':
      return cmdConfig(rest);
    case 'fleet':
      return cmdFleet(rest, paths).catch((e: unknown) => {
        throw e instanceof FleetUsageError ? new UsageError(e.message, 'fleet') : e;
      });
    case 'gc':
      return cmdGc(rest, paths).catch((e: unknown) => {
        throw e instanceof GcUsageError ? new UsageError(e.message, 'gc') : e;
      });
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE + '\n');
      return cmd === undefined ? EXIT.usage : 0;
    default:
      throw new UsageError(`unknown command "${cmd}"`);
  }
}

/** Exit once everything written to stdout/stderr has left the process (pipes are asynchronous here). */
function exitAfterFlush(code: number): void {
  let pending = 2;
  const done = (): void => {
    if (--pending === 0) process.exit(code);
  };
  process.stdout.write('', done);
  process.stderr.write('', done);
}

let finished = false;
process.on('beforeExit', () => {
  if (finished) return;
  // Reaching here means a promise was left pending (e.g. the supervisor went away mid-request).
  process.stderr.write('runboard: the supervisor closed the connection before answering\n');
  process.exit(EXIT.unavailable);
});

main(process.argv.slice(2)).then(
  (code) => {
    finished = true;
    exitAfterFlush(code);
  },
  (err: unknown) => {
    let code: number = EXIT.usage;
    let msg = (err as Error).message ?? String(err);
    const parseError = String((err as NodeJS.ErrnoException).code ?? '').startsWith('ERR_PARSE_ARGS');
    if (err instanceof NotHereError) {
      // one sentence saying what to run: no usage, no stack
    } else if (err instanceof UsageError || parseError) {
      // the command's own usage line, not the whole help
      const usage = usageOf(err instanceof UsageError ? err.command : process.argv[2]);
      msg += usage ? `\n${usage}` : '';
      msg += '\n(`runboard help` lists every command)';
    } else if (err instanceof SupervisorUnavailable) code = EXIT.unavailable;
    else if (err instanceof ResponseError) msg = `refused: ${err.message}`;
    else if (!(
      err instanceof ProjectError ||
      err instanceof NoGrantError ||
      err instanceof GrantError ||
      (err as NodeJS.ErrnoException).code
    ))
      msg = (err as Error).stack ?? msg;
    finished = true;
    process.stderr.write(`runboard: ${msg}\n`);
    exitAfterFlush(code);
  },
);
