/**
 * The board's Settings: the supervisor's model providers and their keys, the project's disk use, the caps and column limits
 * written back into config.yaml (keeping its comments and order), and the effective config as the
 * files say now.
 */
import { JsonRpcCodes, ResponseError } from '@runboard/supervisor/protocol';
import type { StatePaths } from '@runboard/supervisor/paths';
import {
  COLUMNS,
  type ConfigView,
  type DiskUsageView,
  type KeyCheck,
  type ProviderView,
  type Settings,
} from '../shared/board-types.ts';
import { Invalid } from './board-errors.ts';
import type { BoardStore } from './board-store.ts';
import { setYamlValues, type YamlSet } from './config-edit.ts';
import { diskUsageView } from './gc.ts';
import { flowProvider } from './launch.ts';
import { configRows, loadEffectiveConfig, userConfigPath } from './project.ts';
import type { Scheduler } from './scheduler.ts';
import type { SupervisorClient } from './supervisor-client.ts';

export class BoardSettings {
  constructor(
    private readonly store: BoardStore,
    private readonly client: SupervisorClient,
    private readonly scheduler: Scheduler,
    private readonly paths: StatePaths,
  ) {}

  /** The project's disk use, for Settings (gc.ts: the same scan `runboard gc` makes). */
  diskUsage(): Promise<DiskUsageView> {
    return diskUsageView(this.paths, this.store.projectDir, this.store.config.retention);
  }

  /** The supervisor's providers and the ones config.yaml's flows name, each with its flows. */
  async providers(): Promise<ProviderView[]> {
    const { providers } = await this.client.listProviders();
    const cfg = this.store.config;
    // a flow's provider is its own or its profile's
    const flows = Object.entries(cfg.flows).map(([n, f]) => [n, flowProvider(f, cfg)] as const);
    const usedBy = (name: string): string[] => flows.filter(([, p]) => p === name).map(([n]) => n);
    const out: ProviderView[] = providers.map((p) => ({ ...p, known: true, flows: usedBy(p.name) }));
    for (const [, provider] of flows)
      if (provider && !out.some((p) => p.name === provider))
        out.push({ name: provider, baseUrl: '', hasKey: false, known: false, flows: usedBy(provider) });
    return out;
  }

  /** Stores (or removes) a provider key with the supervisor; cards waiting for it may start. */
  async setProviderKey(provider: string, key: string | null): Promise<{ hasKey: boolean }> {
    const known = (await this.client.listProviders()).providers.some((p) => p.name === provider);
    if (!known)
      throw new Invalid(
        `the supervisor knows no provider "${provider}" (it knows openai, anthropic and those given by RUNBOARD_PROVIDER_<NAME>_URL)`,
      );
    const r = await this.client.setProviderKey(provider, key);
    if (r.hasKey) this.scheduler.keyStored(provider);
    return { hasKey: r.hasKey };
  }

  /** Asks the provider, through the supervisor, whether it accepts the stored key. */
  async checkProviderKey(provider: string): Promise<KeyCheck> {
    try {
      const { ok, status, message } = await this.client.checkProviderKey(provider);
      return { ok, ...(status !== undefined ? { status } : {}), message };
    } catch (err) {
      if (err instanceof ResponseError && err.code === JsonRpcCodes.MethodNotFound)
        return {
          ok: false,
          message: 'this supervisor cannot check keys yet: restart it (runboard supervisor stop)',
        };
      throw err;
    }
  }

  settings(): Settings {
    const cfg = this.store.config;
    return {
      maxConcurrency: cfg.scheduler.maxConcurrency,
      flows: Object.entries(cfg.flows).map(([name, f]) => ({ name, cap: f.cap })),
      columnLimits: cfg.scheduler.columnLimits,
    };
  }

  /** The effective config as the files say now (defaults ← user config ← config.yaml), for Settings. */
  configView(): ConfigView {
    try {
      const eff = loadEffectiveConfig(this.store.projectDir);
      return {
        files: eff.files,
        warnings: eff.warnings,
        rows: configRows(eff).map(({ key, value, source }) => ({
          key,
          value: typeof value === 'string' ? value : JSON.stringify(value),
          ...source,
        })),
      };
    } catch (err) {
      const files = { user: userConfigPath(), project: this.store.configFile, userExists: false };
      return { files, warnings: [], rows: [], error: (err as Error).message };
    }
  }

  /** Writes the caps back into config.yaml, keeping its comments and order. */
  saveSettings(s: Settings): void {
    const known = this.store.config.flows;
    // checked before anything is written; own names only (`__proto__`, `constructor` are no flows)
    for (const f of s.flows)
      if (!Object.hasOwn(known, f.name))
        throw new Invalid(
          `no flow ${f.name} in config.yaml (flows: ${Object.keys(known).join(', ') || 'none'})`,
        );
    // only what changed is written (a value left at its default stays unwritten)
    const cfg = this.store.config;
    const sets: YamlSet[] = [];
    if (s.maxConcurrency !== cfg.scheduler.maxConcurrency)
      sets.push({ path: ['scheduler', 'maxConcurrency'], value: s.maxConcurrency });
    for (const f of s.flows)
      if (f.cap !== known[f.name]!.cap) sets.push({ path: ['flows', f.name, 'cap'], value: f.cap });
    for (const col of COLUMNS) {
      const limit = s.columnLimits[col];
      // 0 means no limit: an existing entry is set to 0 in place, none is added
      if (limit !== undefined && limit !== (cfg.scheduler.columnLimits[col] ?? 0))
        sets.push({ path: ['scheduler', 'columnLimits', col], value: limit });
    }
    if (sets.length) this.store.updateConfig((text) => setYamlValues(text, sets));
    this.scheduler.kick();
  }
}
