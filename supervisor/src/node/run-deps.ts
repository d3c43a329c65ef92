/**
 * What a run is given: the supervisor's parts and settings it uses (RunDeps) and the launch it carries
 * out (LaunchSpec). Beside run.ts so that the files a run composes can name them without importing it.
 */
import type { Logger } from 'pino';
import type { Command, CardRef, FlowSpec } from '../protocol/index.ts';
import type { ProtectedDir } from '../common/protected-dirs.ts';
import type { ModelProxy } from './model-proxy.ts';

export interface RunDeps {
  log: Logger;
  jailPath: string;
  /** The command line that starts a worker (node + snapshot or bundle). */
  workerArgv: string[];
  /** Trees no run may read: the state root (keys, grants, other runs' logs and scratch dirs). */
  hiddenPaths: string[];
  /** The system's trees and Runboard's install, which every run may read (reads.ts); [] reads all. */
  /** Files and folders in those trees only root may read now, covered for a root run (root-only.ts). */
  blanked?: () => string[];
  readTrees?: string[];
  /** The PATH runs get: the supervisor's without the folders they cannot read (reads.ts). */
  runPath?: string;
  /** Folders never asked (Runboard's install folder, the desktop's sockets: protected-dirs.ts). */
  protectedPaths?: ProtectedDir[];
  /** The granted folders now (a folder around one is never asked). */
  grantedPaths?: () => string[];
  /** Landlock ABI of the kernel (0: none). */
  landlockAbi: number;
  landlockReason: string;
  useNamespaces: boolean;
  supervisorDir: string;
  baseEnv: NodeJS.ProcessEnv;
  /** The loopback model proxy and where provider keys come from (coding-agent runs). */
  proxy?: ModelProxy;
  hasKey?: (provider: string) => boolean;
  missingKeyGuidance?: (provider: string) => string;
  /** Project folders the supervisor knows (schedule book): what of them is in a run's reach stays read-only. */
  knownProjects?: () => string[];
  /** A replay card's sensitive parameter values from the supervisor's store (secrets.ts), by name. */
  paramSecrets?: (cardPath: string) => Promise<Record<string, string>>;
  /**
   * `command` runs through a Node worker as agent runs do, instead of under the jail's init
   * (RUNBOARD_COMMAND_WORKER=node: the benchmark's measure of what a Node worker's start costs).
   */
  nodeCommandWorker?: boolean;
  /** A write in the state root failed ENOSPC (`where`): retention runs at once (gc-auto.ts). */
  onDiskFull?: (where: string) => void;
}

export interface LaunchSpec {
  runId: string;
  logDir: string;
  scratchDir: string;
  card: CardRef;
  flow: FlowSpec;
  workspace: string;
  command: Command | undefined;
  /** The grant's folder (realpath): a run's worktree must stay inside it. */
  grantPath?: string;
  /** Continue the agent session an earlier run of the card kept at an ask the person allowed. */
  resumeFrom?: { logDir: string; session: string; note: string };
}
