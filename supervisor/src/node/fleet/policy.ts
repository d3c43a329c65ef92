/**
 * The sandbox a fleet host allows (its `runboard fleet join` options), and a job's flow held to it. A
 * job comes from whoever can write to Redis: its flow may narrow the host's policy (fewer ports, no
 * UDP, a smaller /tmp, fewer processes) but never widen it. A job asking for more is refused, saying
 * what it asked and which `fleet join` option would allow it; what a job leaves unset gets the
 * host's bound where that is narrower than a local run's default.
 */
import { realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as z from 'zod/mini';
import { MEMORY_SIZE, memorySizeBytes, RunId, TMP_SIZE, type FlowSpec } from '../../protocol/index.ts';
import { DEFAULT_MAX_PROCESSES, DEFAULT_MEMORY, DEFAULT_TMP_SIZE } from '../jail-args.ts';

/** What `fleet join` says a job's run may have at most (absent: a local run's defaults, nothing more). */
export const HostPolicy = z.object({
  /** TCP ports a job may ask to connect to (sandbox.tcpPorts). */
  tcpPorts: z.optional(z.array(z.int().check(z.minimum(1), z.maximum(65535))).check(z.maxLength(64))),
  /** A job may ask for UDP (sandbox.udp). */
  udp: z.optional(z.boolean()),
  /** A job may ask for abstract unix sockets (sandbox.allowAbstractUnix). */
  abstractUnix: z.optional(z.boolean()),
  /** A job may run where the kernel cannot sandbox (sandbox.allowUnsandboxed). */
  allowUnsandboxed: z.optional(z.boolean()),
  /** The largest /tmp a job's run gets (sandbox.tmpSize's syntax; default: a local run's default, DEFAULT_TMP_SIZE). */
  tmpSize: z.optional(z.string().check(z.regex(TMP_SIZE, 'a size such as 512m, 2g or 25% (at most 100%)'))),
  /** The most memory a job's run may use (sandbox.memory's syntax; default: a local run's, DEFAULT_MEMORY). */
  memory: z.optional(z.string().check(z.regex(MEMORY_SIZE, 'a size such as 512m, 4g or 50%'))),
  /** Most processes a job's run may have (default 1024, a local run's default). */
  maxProcesses: z.optional(z.int().check(z.minimum(16), z.maximum(1_000_000))),
  /** Folders inside which a job may ask for writable trees (sandbox.writable); none by default. */
  writable: z.optional(z.array(z.string().check(z.minLength(1), z.maxLength(4096))).check(z.maxLength(64))),
});
export type HostPolicy = z.infer<typeof HostPolicy>;

/** Bytes of a tmpfs size (TMP_SIZE syntax): k, m, g or a share of this machine's memory. */
export function tmpBytes(size: string, totalMem = os.totalmem()): number {
  const pct = /^(\d+)%$/.exec(size);
  if (pct) return Math.floor((totalMem * Number(pct[1])) / 100);
  const m = /^(\d+)([kmg]?)$/.exec(size);
  if (!m) return Number.POSITIVE_INFINITY;
  return Number(m[1]) * { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2] as '' | 'k' | 'm' | 'g'];
}

const realOrNull = (p: string): string | null => {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
};
const inside = (p: string, dir: string): boolean =>
  p === dir || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);

/** A path from a job: absolute, and already in its normal form (no `.`, `..`, `//`). */
function plainAbsolute(p: string): boolean {
  return path.isAbsolute(p) && path.normalize(p) === p && !p.includes('\0');
}

/**
 * The flow a host runs for a job: `flow` within `policy`, or why not (with the option that would
 * allow it). `host` names the host in the reason.
 */
export function holdToPolicy(
  flow: FlowSpec,
  policy: HostPolicy,
  host: string,
  totalMem = os.totalmem(),
): { flow: FlowSpec } | { refused: string } {
  const sb = flow.sandbox ?? {};
  const refuse = (what: string, option: string): { refused: string } => ({
    refused: `${host} refused the job: it asks for ${what}, which this host's sandbox policy does not allow (${option} on \`runboard fleet join\` allows it)`,
  });
  for (const port of sb.tcpPorts ?? [])
    if (!(policy.tcpPorts ?? []).includes(port)) return refuse(`TCP port ${port}`, `--tcp-port ${port}`);
  if (sb.udp && !policy.udp) return refuse('UDP sockets', '--udp');
  if (sb.allowAbstractUnix && !policy.abstractUnix) return refuse('abstract unix sockets', '--abstract-unix');
  if (sb.allowUnsandboxed && !policy.allowUnsandboxed)
    return refuse('to run unsandboxed', '--allow-unsandboxed');
  const maxProcs = policy.maxProcesses ?? DEFAULT_MAX_PROCESSES;
  if (sb.maxProcesses !== undefined && sb.maxProcesses > maxProcs)
    return refuse(
      `${sb.maxProcesses} processes (at most ${maxProcs} here)`,
      `--max-processes ${sb.maxProcesses}`,
    );
  const maxTmp = policy.tmpSize ?? DEFAULT_TMP_SIZE;
  if (sb.tmpSize !== undefined && tmpBytes(sb.tmpSize, totalMem) > tmpBytes(maxTmp, totalMem))
    return refuse(`a /tmp of ${sb.tmpSize} (at most ${maxTmp} here)`, `--tmp-size ${sb.tmpSize}`);
  const maxMemory = policy.memory ?? DEFAULT_MEMORY;
  const memBytes = (s: string): number => memorySizeBytes(s, totalMem) ?? Number.POSITIVE_INFINITY;
  if (sb.memory !== undefined && memBytes(sb.memory) > memBytes(maxMemory))
    return refuse(`a memory limit of ${sb.memory} (at most ${maxMemory} here)`, `--memory ${sb.memory}`);
  const allowed = (policy.writable ?? []).map(realOrNull).filter((d): d is string => d !== null);
  for (const w of sb.writable ?? []) {
    if (!plainAbsolute(w))
      return {
        refused: `${host} refused the job: its writable path ${JSON.stringify(w)} is not a plain absolute path`,
      };
    // The jail opens the path (following links): what counts is where it leads on this host.
    const real = realOrNull(w);
    if (!real || !allowed.some((d) => inside(real, d)))
      return refuse(
        `to write ${w}${real && real !== w ? ` (${real})` : ''}`,
        `--writable <a folder holding it>`,
      );
  }
  for (const [what, p] of [
    ['prompt folder', flow.prompt],
    ['extraction input', flow.extract?.input],
  ] as const)
    if (p !== undefined && !plainAbsolute(p))
      return {
        refused: `${host} refused the job: its ${what} ${JSON.stringify(p)} is not a plain absolute path`,
      };
  // What the job left unset: the host's bound where it is narrower than a local run's default.
  const narrowed: NonNullable<FlowSpec['sandbox']> = { ...sb };
  if (sb.maxProcesses === undefined && maxProcs < DEFAULT_MAX_PROCESSES) narrowed.maxProcesses = maxProcs;
  if (sb.tmpSize === undefined && tmpBytes(maxTmp, totalMem) < tmpBytes(DEFAULT_TMP_SIZE, totalMem))
    narrowed.tmpSize = maxTmp;
  if (sb.memory === undefined && memBytes(maxMemory) < memBytes(DEFAULT_MEMORY)) narrowed.memory = maxMemory;
  return { flow: { ...flow, sandbox: narrowed } };
}

/**
 * A job's id as a host takes it: a run id (the gateway names each job by its run), the same as the
 * run id inside the job. Anything else is refused before any path is made from it.
 */
export function jobRunId(jobId: string | undefined, dataRunId: unknown): string | null {
  if (typeof jobId !== 'string' || !RunId.safeParse(jobId).success) return null;
  return jobId === dataRunId ? jobId : null;
}
