/**
 * A card's workflow on the board: the editor's view and save, and a replay card's parameters (the
 * board's form). A sensitive parameter's value goes to the supervisor's secrets; the card keeps only
 * its reference.
 */
import { checkWorkflow, paramSecretRefs } from '@runboard/supervisor/protocol';
import type { ReplayParamsView } from '../shared/replay-params.ts';
import type { CardWorkflowView, WorkflowSaveResult } from '../shared/workflow-edit.ts';
import { Invalid, MoveRefused } from './board-errors.ts';
import type { BoardStore } from './board-store.ts';
import type { Card } from './project.ts';
import type { Scheduler } from './scheduler.ts';
import type { SupervisorClient } from './supervisor-client.ts';
import { saveWorkflow, workflowView } from './workflow-store.ts';

export interface BoardWorkflowsDeps {
  store: BoardStore;
  client: SupervisorClient;
  scheduler: Scheduler;
  /** The card by id, or NotFound. */
  card(id: string): Card;
  /** Queues the card at the end of Queued, as a person's move does. */
  queue(id: string): void;
  /** The board changed: its view is sent again soon. */
  changed(): void;
}

export class BoardWorkflows {
  constructor(private readonly deps: BoardWorkflowsDeps) {}

  /** The card's workflow for the editor (docs/workflows.md). */
  workflow(id: string): CardWorkflowView {
    return workflowView(this.deps.card(id).file, this.deps.store.projectDir);
  }

  /** A replay card's parameters and the card's values for them (the board's form). */
  replayParams(id: string): ReplayParamsView {
    const card = this.deps.card(id);
    const replay = this.deps.store.config.flows[card.front.flow]?.runner === 'replay';
    const view = workflowView(card.file, this.deps.store.projectDir);
    if (!view.workflow)
      return {
        replay,
        params: [],
        problem:
          view.text === undefined ? `no workflow yet (${view.file})` : `${view.file} is not a valid workflow`,
      };
    const given = paramsOf(card.front.params);
    const stored = paramSecretRefs(card.front.params);
    return {
      replay,
      params: view.workflow.task_params.map((p) => ({
        name: p.name,
        description: p.description,
        example: p.example,
        sensitive: p.sensitive,
        optional: p.optional,
        // a sensitive value never goes back to the page: only that the supervisor keeps one
        ...(stored[p.name] ? { stored: true } : {}),
        ...(given[p.name] !== undefined && !p.sensitive ? { value: given[p.name] } : {}),
      })),
    };
  }

  /**
   * Writes the card's `params:` (its workflow's parameters only); with `queue`, queues the card. A
   * sensitive parameter's value goes to the supervisor's secrets and the card keeps its reference
   * (`{secret: s-…}`); an empty one keeps the reference the card has. A sensitive value the card holds
   * in clear (written by hand, or by an older board) is moved there too.
   */
  async setReplayParams(
    id: string,
    params: Record<string, string>,
    queue: boolean | undefined,
  ): Promise<void> {
    const card = this.deps.card(id);
    if (this.deps.scheduler.isActive(id))
      throw new MoveRefused('the card is running: change its parameters after the run');
    const w = workflowView(card.file, this.deps.store.projectDir).workflow;
    if (!w)
      throw new MoveRefused(
        'the card has no valid workflow: reflect a recording into it, or fix its schema.json',
      );
    const names = w.task_params.map((p) => p.name);
    const unknown = Object.keys(params).filter((k) => !names.includes(k));
    if (unknown.length)
      throw new Invalid(
        `${unknown.map((k) => `"${k}"`).join(', ')} is not a parameter of the workflow (it has: ${names.join(', ') || 'none'})`,
      );
    const sensitive = new Set(w.task_params.filter((p) => p.sensitive).map((p) => p.name));
    const refs = paramSecretRefs(card.front.params);
    const inCard = paramsOf(card.front.params);
    const kept: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(params)) if (v !== '' && !sensitive.has(k)) kept[k] = v;
    for (const k of sensitive) {
      const v = params[k] || (refs[k] ? '' : (inCard[k] ?? ''));
      if (v === '') {
        if (refs[k]) kept[k] = { secret: refs[k] };
        continue;
      }
      const { ref } = await this.deps.client.setParamSecret(card.file, k, v, refs[k]);
      if (ref) kept[k] = { secret: ref };
    }
    if (this.deps.scheduler.isActive(id))
      throw new MoveRefused('the card is running: change its parameters after the run');
    this.deps.store.update(id, { params: Object.keys(kept).length ? kept : undefined });
    if (queue) this.deps.queue(id);
    this.deps.changed();
    this.deps.scheduler.kick();
  }

  /** What is wrong with an edited workflow; saves nothing. */
  checkWorkflow(id: string, workflow: unknown): WorkflowSaveResult {
    this.deps.card(id);
    const r = checkWorkflow(workflow);
    return { saved: false, problems: r.ok ? [] : r.problems };
  }

  /** A person's edit of the card's workflow: saved whole when valid and the file is still `base`. */
  saveWorkflow(id: string, workflow: unknown, base: string | undefined): WorkflowSaveResult {
    const { file } = this.deps.card(id);
    if (this.deps.scheduler.isActive(id))
      throw new MoveRefused('the card is running: edit its workflow after the run');
    const r = saveWorkflow(file, workflow, base ?? null);
    return { saved: r.ok, problems: r.ok ? [] : r.problems };
  }
}

/** A card's `params:` front matter as strings (what a person wrote: numbers and booleans too). */
export function paramsOf(v: unknown): Record<string, string> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return {};
  return Object.fromEntries(
    Object.entries(v as Record<string, unknown>)
      // a reference to a value the supervisor keeps is not a value
      .filter(([, x]) => x !== null && x !== undefined && typeof x !== 'object')
      .map(([k, x]) => [k, String(x)]),
  );
}
