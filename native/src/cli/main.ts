#!/usr/bin/env -S -u NODE_EXTRA_CA_CERTS node
// desktop-cli: a command surface over the native addon for agents that can run a shell command. Stateless apart from the small
// read context that lets `click --id` find an element again by its signature (see context.ts).
// The #! line drops NODE_EXTRA_CA_CERTS: Node parses that CA bundle at every start (~75 ms on a
// machine whose environment sets it, twice Node's own start-up) and desktop-cli makes no TLS connection.
// The commands and flags are those of the public desktop-cli (mj1618/desktop-cli, spec.ts); seed 003's
// compact JSON stays the default output (--format yaml|agent for the public tool's).
import pkg from '../../package.json' with { type: 'json' };
import { focus, clipboard, open } from './app-commands.ts';
import { parse } from './args.ts';
import { asCliError, CliError, EXIT_CODES, errorReport } from './errors.ts';
import { readScreenshot, screenshot, screenshotCoords } from './image-commands.ts';
import { click, hover, typeCmd, scroll, drag, action, setValue, fill } from './input-commands.ts';
import {
  writeOut,
  writeErr,
  wasQueued,
  setSinks,
  sibling,
  type Format,
  formatOf,
  render,
  setStdinText,
} from './output.ts';
import { list, read, find } from './read-commands.ts';
import { COMMANDS, SERVE_HELP } from './spec.ts';
import { doCmd, type Commands } from './steps.ts';
import { wait, assertCmd, observe } from './wait-commands.ts';

const USAGE =
  'desktop-cli <command> [flags]   (JSON on stdout, or --format yaml|agent; errors as JSON on stderr; --version)\n\n' +
  Object.values(COMMANDS)
    .map((c) => '  ' + c.help)
    .join('\n') +
  `\n  ${SERVE_HELP}\n`;

const COMMAND_FNS: Commands = {
  list,
  read: (v) => (v.format === 'screenshot' ? readScreenshot(v) : read(v)),
  find,
  click,
  hover,
  type: typeCmd,
  'set-value': setValue,
  fill,
  focus,
  scroll,
  drag,
  action,
  wait,
  assert: assertCmd,
  observe,
  screenshot,
  'screenshot-coords': screenshotCoords,
  clipboard,
  open,
  do: (v) => doCmd(v, COMMAND_FNS),
};

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === 'serve') {
    // The MCP server is a bundle of its own (the SDK would slow every other command's start-up).
    type Mcp = { serve(args: string[], exec: typeof execute): Promise<number> };
    return (await sibling<Mcp>('desktop-mcp.cjs', 'mcp.ts')).serve(rest, execute);
  }
  if (name === '--version' || name === '-V') {
    writeOut(`desktop-cli ${pkg.version}\n`);
    return 0;
  }
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    writeOut(USAGE);
    return name ? 0 : 2;
  }
  let fmt: Format = 'json';
  let pretty = false;
  try {
    const cmd = COMMANDS[name];
    if (!cmd) throw new CliError('USAGE', `unknown command "${name}" (desktop-cli --help lists them)`);
    if (rest.includes('--help') || rest.includes('-h')) {
      writeOut(cmd.help + '\n');
      return 0;
    }
    const { values, positionals } = parse(name, rest);
    fmt = formatOf(values, name);
    pretty = values.pretty === true;
    const o = await COMMAND_FNS[name]!(values, positionals);
    writeOut(await render(o, fmt, pretty));
    if (o.error) {
      writeErr(errorReport(o.error) + '\n');
      return EXIT_CODES[o.error.code];
    }
    return 0;
  } catch (e) {
    const err = asCliError(e);
    writeErr(errorReport(err) + '\n');
    return EXIT_CODES[err.code];
  }
}

let queue: Promise<unknown> = Promise.resolve();

/**
 * Runs one desktop-cli command in this process and returns what it would have printed. Calls are
 * serialised (the output sinks are shared). Used by `desktop-cli serve`.
 */
export function execute(
  argv: string[],
  stdin?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = async (): Promise<{ code: number; stdout: string; stderr: string }> => {
    let stdout = '';
    let stderr = '';
    const prev = setSinks({ out: (s) => void (stdout += s), err: (s) => void (stderr += s) });
    setStdinText(stdin);
    try {
      const code = await main(argv);
      return { code, stdout, stderr };
    } finally {
      setSinks(prev);
      setStdinText(undefined);
    }
  };
  const next = queue.then(run, run);
  queue = next.catch(() => undefined);
  return next;
}

const LOOK_ONLY = new Set([
  'list',
  'read',
  'find',
  'focus',
  'screenshot',
  'screenshot-coords',
  'wait',
  'assert',
  'observe',
  '--version',
  '-V',
  '--help',
  '-h',
  'help',
]);

const self = process.argv[1] ?? '';
if (/desktop-cli(\.[cm]?[jt]s)?$|cli[\\/]main\.ts$/.test(self)) {
  const argv = process.argv.slice(2);
  main(argv).then(
    (code) => {
      // Everything is written synchronously by now: a command that only looks (list, read, focus,
      // screenshot) exits at once rather than wait for Node's teardown, which a loaded machine makes
      // slow. One that injected input ends the normal way: ended at once right after typing on
      // remapped keycodes, characters went missing in the app (tests/desktop, "across processes").
      // The MCP server ends when its input closes and its transport writes through the stream.
      if (wasQueued() || !LOOK_ONLY.has(argv[0] ?? '')) process.exitCode = code;
      else process.exit(code);
    },
    (e: unknown) => {
      // main answers every expected failure itself; anything else is a bug, reported as such.
      process.stderr.write(
        `desktop-cli: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
      );
      process.exitCode = 1;
    },
  );
}
