/**
 * The `replay` runner (seed 002's Replay): a card's workflow (`schema.json`, made by reflect and the
 * editor) run again with the card's parameters, subtask by subtask, by accessibility locators first and
 * the model only where the screen drifted. docs/workflows.md, "Replay".
 *
 * Same desktop as a computer-use run (worker/src/desktop/session.ts: private display or takeover, live
 * view), same budgets, same model proxy and wire formats (worker/src/models); the engine is replay.ts.
 */
import type { RunnerContext, RunnerOutcome } from '../runner.ts';
import { loadPromptFolder } from '../../desktop/prompt.ts';
import { budgets, DesktopRunner, ended, onDesktop } from '../../desktop/session.ts';
import { apiOf } from '../../models/conversation.ts';
import { cardWorkflow, loadPlan, PlanError, resolveParams, shown, type Plan } from './plan.ts';
import { PREDICT_TOOLS } from './predict.ts';
import { Replay, type ReplayPrompt } from './replay.ts';

const REPLAY = { maxModelTurnsPerSubtask: 8, settleMs: 2000 };
const HUD_TEXT = 'Runboard: a workflow is replaying on this desktop. Press Esc to take over.';

export class ReplayRunner extends DesktopRunner {
  async run(ctx: RunnerContext): Promise<RunnerOutcome> {
    const { spec } = ctx;
    if (!spec.model)
      return ended(
        'failed',
        `flow "${spec.flow.name}" has no provider: a replay run asks a model where the screen drifted (\`provider:\` openai, anthropic, or an OpenAI-compatible server)`,
      );
    if (!spec.flow.prompt)
      return ended('failed', `flow "${spec.flow.name}" has no prompt folder (prompts/replay_agent)`);
    let plan: Plan;
    let prompt: ReplayPrompt;
    let front: Record<string, unknown>;
    try {
      prompt = loadPromptFolder(spec.flow.prompt, PREDICT_TOOLS);
      const w = cardWorkflow(spec.card.path);
      front = w.front;
      plan = loadPlan(w.workflowFile);
    } catch (err) {
      const m = (err as Error).message;
      // A workflow that is missing or broken is the person's to fix: they are asked, not failed.
      return err instanceof PlanError ? ended('needs-input', m, [m]) : ended('failed', m);
    }
    const { values, missing, unknown, lostSecrets, inClear } = resolveParams(plan, front, spec.secrets);
    if (inClear.length)
      ctx.log(
        'warn',
        `the card holds the sensitive parameter(s) ${inClear.join(', ')} in clear: give them in the board's Replay parameters form, which hands them to the supervisor and keeps only a reference in the card`,
        { kind: 'replay-params', inClear },
      );
    if (unknown.length)
      ctx.log('warn', `the card gives parameters the workflow does not have: ${unknown.join(', ')}`, {
        kind: 'replay-params',
        unknown,
      });
    if (missing.length)
      return ended(
        'needs-input',
        `the workflow needs values for ${missing.map((p) => p.name).join(', ')}`,
        missing.map((p) =>
          lostSecrets.includes(p.name)
            ? `The sensitive value of "${p.name}" is no longer kept by the supervisor (it was removed, or the card file was moved or renamed since it was given). Give it again in the board's Replay parameters form.`
            : `What value should "${p.name}" have${p.description ? ` (${p.description})` : ''}? Give it in the card's front matter (params: {${p.name}: …}) or in the board's form when queuing the card${p.sensitive ? ' (a sensitive one only in the form: the supervisor keeps it, the card a reference)' : ''}.`,
        ),
      );
    ctx.log('info', `replaying "${plan.task}" with ${Object.keys(values).length} parameter(s)`, {
      kind: 'replay-params',
      values: shown(plan, values),
    });
    const api = apiOf(spec.model.provider, spec.flow.computerUse?.api);
    const model = spec.model.model ?? prompt.config.llm.model ?? 'gpt-5.2-codex';
    return onDesktop(ctx, this.abort, HUD_TEXT, ({ region, guard, artifacts, masks, onShot }) =>
      new Replay(ctx, plan, values, prompt, api, model, artifacts, this.abort.signal, guard, {
        ...budgets(ctx, region, masks, onShot),
        ...REPLAY,
      }).run(),
    );
  }
}
