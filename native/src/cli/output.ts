// Where desktop-cli's results and errors go (fd 1/2, or a buffer for the MCP server), the sibling
// bundles it loads on demand (YAML, MCP), the output formats (json, yaml, agent) and stdin.
import { existsSync, readFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type Values, type Out } from './args.ts';
import { CliError } from './errors.ts';

/**
 * Writes to fd 1 or 2 directly: touching process.stdout on a pipe builds a net.Socket, which costs a
 * command ~3 ms of CPU (a tenth of Node's own start-up). A descriptor that is non-blocking and full
 * (EAGAIN) gets the rest through the stream, which queues it.
 */
let queued = false; // some output went through a stream: the process must not exit before it drains
function writeFd(fd: 1 | 2, s: string): void {
  const buf = Buffer.from(s);
  let off = 0;
  try {
    while (off < buf.length) off += writeSync(fd, buf, off);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
    queued = true;
    (fd === 1 ? process.stdout : process.stderr).write(buf.subarray(off));
  }
}

// Where results and errors go: the process's stdout/stderr, or a buffer when `execute` runs a
// command for the MCP server (whose stdout is the MCP channel).
const sinks = { out: (s: string): void => writeFd(1, s), err: (s: string): void => writeFd(2, s) };
export const writeOut = (s: string): void => sinks.out(s);
export const writeErr = (s: string): void => sinks.err(s);
/** Whether some output was queued on a stream (the process must let it drain before it exits). */
export const wasQueued = (): boolean => queued;

/** Sends results and errors elsewhere (execute's buffers); returns the sinks it replaced. */
export function setSinks(next: typeof sinks): typeof sinks {
  const prev = { ...sinks };
  sinks.out = next.out;
  sinks.err = next.err;
  return prev;
}

/** A bundle next to this one (desktop-yaml.cjs, desktop-mcp.cjs), or its source when run from source. */
export async function sibling<T>(bundle: string, source: string): Promise<T> {
  const here =
    typeof __filename === 'string' ? path.dirname(__filename) : path.dirname(fileURLToPath(import.meta.url));
  const file = existsSync(path.join(here, bundle)) ? path.join(here, bundle) : path.join(here, source);
  const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown> & { default?: unknown };
  return (Object.keys(mod).length === 1 && mod.default ? mod.default : mod) as T;
}

type Yaml = { parse(s: string): unknown; stringify(v: unknown): string };
let yamlMod: Yaml | undefined;
export async function yaml(): Promise<Yaml> {
  yamlMod ??= await sibling<Yaml>('desktop-yaml.cjs', 'yaml.ts');
  return yamlMod;
}

export type Format = 'json' | 'yaml' | 'agent';
export function formatOf(v: Values, cmd: string): Format {
  if (cmd === 'screenshot' || cmd === 'screenshot-coords') return 'json';
  const f = v.format ?? 'json';
  if (f === 'json' || f === 'yaml' || f === 'agent') return f;
  if (f === 'screenshot' && cmd === 'read') return 'json'; // read makes the image and the list itself
  throw new CliError(
    'USAGE',
    `--format must be json (the default), yaml or agent${f === 'screenshot' ? ' (screenshot: read only, or the screenshot command)' : ''}`,
  );
}

export async function render(o: Out, fmt: Format, pretty: boolean): Promise<string> {
  if (o.raw !== undefined) return o.raw;
  if (fmt === 'json' && !pretty && o.json) return o.json() + '\n';
  if (fmt === 'json') return JSON.stringify(o.value, null, pretty ? 2 : undefined) + '\n';
  if (fmt === 'agent' && o.agent !== undefined) return typeof o.agent === 'string' ? o.agent : o.agent();
  return (await yaml()).stringify(o.value);
}

/** What `do`/`fill` read as stdin when run by the MCP server (its own stdin is the MCP channel). */
let stdinText: string | undefined;

/** Gives `do`/`fill` the MCP request's stdin (undefined: the process's own). */
export function setStdinText(s: string | undefined): void {
  stdinText = s;
}

/** The steps or fields on stdin: undefined when stdin is a terminal (nothing piped in). */
export function readStdin(): string | undefined {
  if (stdinText !== undefined) return stdinText;
  if (process.stdin.isTTY) return undefined;
  return readFileSync(0, 'utf8');
}
