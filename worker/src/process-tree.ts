/**
 * Signalling everything a run started. Inside the jail's PID namespace the worker is PID 1, and
 * kill(-1) reaches every other process of the run (and nothing outside it). Without the namespace
 * (the jail's subreaper fallback) it signals the tool's process group; the jail kills the rest.
 */
export function killRunProcesses(toolPid: number | undefined, signal: NodeJS.Signals): void {
  try {
    if (process.pid === 1) process.kill(-1, signal);
    else if (toolPid) process.kill(-toolPid, signal);
  } catch {
    // Nothing left to signal.
  }
}
