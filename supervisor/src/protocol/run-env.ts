/**
 * The environment variables that cross from the supervisor (and the jail) into a run: their names,
 * declared once for both sides. The supervisor builds a run's whole environment (node/jail-args.ts);
 * the worker and the runners read these.
 */
export const RunEnv = {
  /** The run's id (the worker proves itself with it and the token). */
  runId: 'RUNBOARD_RUN_ID',
  /** The run endpoint's token; the worker removes it before any tool starts. */
  token: 'RUNBOARD_RUN_TOKEN',
  /** The run's workspace (its worktree when it has one). */
  workspace: 'RUNBOARD_WORKSPACE',
  /** Where the native addon lives; computer-use workers (and desktop-cli) load the desktop addon from there. */
  nativeDir: 'RUNBOARD_NATIVE_DIR',
  /** '1': the supervisor started the flow's app on the run's private display (wait for its window). */
  displayApp: 'RUNBOARD_DISPLAY_APP',
  /**
   * Set by the jail (native/src/linux/jail.cc), not the supervisor: how the run's filesystem is
   * confined, one of FsConfinement. An agent with a sandbox of its own runs it only under `mounts`.
   */
  fsConfinement: 'RUNBOARD_FS_CONFINEMENT',
  /**
   * Set by the worker for the run's tools: a Unix socket where a tool (an agent CLI's permission hook)
   * asks for a path outside the run's sandbox and waits for the person's answer (docs/security-model.md
   * "Asks that wait"). One JSON line each way: `{"kind":"write"|"read","path":…,"tool"?:…}` →
   * `{"decision":"allow"|"deny","message":…}`.
   */
  askSocket: 'RUNBOARD_ASK_SOCKET',
} as const;

export type FsConfinement = 'landlock' | 'mounts' | 'none';
