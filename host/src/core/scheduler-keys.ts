/**
 * The scheduler's waits for provider keys: a run refused for a missing API key marks its flow's
 * provider keyless, and that provider's flows wait (saying how to set the key) while the supervisor is
 * asked every KEY_RECHECK_MS whether the key is there now. No run starts meanwhile, so no failure is
 * counted.
 */
import type { RunResult } from '@runboard/supervisor/protocol';
import type { BoardStore } from './board-store.ts';
import { flowProvider } from './launch.ts';
import type { SupervisorClient } from './supervisor-client.ts';

/** While cards wait for a provider key: how often the supervisor is asked whether it is set. */
const KEY_RECHECK_MS = 2_000;

export class KeyWaits {
  /** Providers whose runs were refused for a missing API key: their flows wait until it is set. */
  private readonly keyless = new Map<string, string>();
  private keyTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly store: BoardStore,
    private readonly client: SupervisorClient,
    /** The board may have changed: the scheduler looks again. */
    private readonly kick: () => void,
  ) {}

  /** Why cards of flows using `provider` wait for its key, or undefined. */
  reason(provider: string): string | undefined {
    return this.keyless.get(provider);
  }

  /**
   * A run refused for a missing API key: its flow's provider is marked keyless (its cards wait, saying
   * how to set the key) and the supervisor is asked every KEY_RECHECK_MS until the key is there. False
   * when the flow has no provider in config.yaml (any more): then it is an ordinary failure.
   */
  waitFor(result: RunResult): boolean {
    const flow = this.store.config.flows[result.flow];
    // its own provider or its profile's
    const provider = flow && flowProvider(flow, this.store.config);
    if (!provider) return false;
    this.keyless.set(
      provider,
      `waiting for an API key for provider "${provider}": set it on the board (Settings → Providers) or ` +
        `with \`printenv YOUR_KEY_VARIABLE | runboard key set ${provider}\`; the card starts once it is set`,
    );
    this.watch();
    return true;
  }

  /** A key was just stored for `provider`: true when cards were waiting for it. */
  stored(provider: string): boolean {
    return this.keyless.delete(provider);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.keyTimer);
  }

  private watch(): void {
    if (this.keyTimer || this.stopped) return;
    this.keyTimer = setTimeout(() => {
      void (async () => {
        try {
          const { providers } = await this.client.listProviders();
          for (const p of providers) if (p.hasKey) this.keyless.delete(p.name);
          for (const name of this.keyless.keys())
            if (!providers.some((p) => p.name === name))
              this.keyless.set(
                name,
                `the supervisor knows no model provider "${name}": correct the flow's provider in config.yaml`,
              );
        } catch (err) {
          process.emitWarning(`runboard: could not ask for provider keys: ${(err as Error).message}`);
        }
        this.keyTimer = undefined;
        if (this.keyless.size) this.watch();
        this.kick();
      })();
    }, KEY_RECHECK_MS);
  }
}
