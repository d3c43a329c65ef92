/**
 * Exclusive resources held by runs this board did not start (another project's board, a CLI run): the
 * real display (`display-busy`). A card refused for one waits in Queued, saying why, and starts as soon
 * as the holder's run ends (followed here) or, at the latest, when the scheduler looks again after
 * RESOURCE_RECHECK_MS.
 */
import type { SupervisorClient } from './supervisor-client.ts';

/** A resource held by a run of someone else's is looked at again after this long at the latest. */
const RESOURCE_RECHECK_MS = 30_000;

export class BusyResources {
  private readonly busy = new Map<string, { why: string; timer: NodeJS.Timeout }>();

  constructor(
    private readonly client: SupervisorClient,
    /** A resource is free (or to be looked at again): the scheduler looks again. */
    private readonly kick: () => void,
  ) {}

  /** Why each busy resource cannot be had now (the policy's `busy`). */
  reasons(): Record<string, string> {
    return Object.fromEntries([...this.busy].map(([res, b]) => [res, b.why]));
  }

  /** `resource` is held by the run `holder` (when the supervisor named it): busy until it ends. */
  hold(resource: string, holder: string | undefined): void {
    clearTimeout(this.busy.get(resource)?.timer);
    const entry = {
      why: holder ? `run ${holder} (not started by this board) is using it` : 'another run is using it',
      timer: setTimeout(() => clear(), RESOURCE_RECHECK_MS),
    };
    const clear = (): void => {
      if (this.busy.get(resource) !== entry) return;
      clearTimeout(entry.timer);
      this.busy.delete(resource);
      this.kick();
    };
    this.busy.set(resource, entry);
    if (holder)
      this.client
        .attach(
          holder,
          { onEnd: clear, onLost: clear },
          {
            events: Number.MAX_SAFE_INTEGER,
            stdout: Number.MAX_SAFE_INTEGER,
            stderr: Number.MAX_SAFE_INTEGER,
          },
        )
        .then((run) => run.status !== 'running' && clear())
        .catch(clear);
  }

  stop(): void {
    for (const b of this.busy.values()) clearTimeout(b.timer);
  }
}
