/**
 * The `computer-use` runner: screenshot → model → desktop_action / desktop_read / terminal_exec →
 * results + fresh screenshot → … until the model's completion JSON. docs/computer-use.md.
 *
 * This file sets a run up (prompt folder, provider); the display, live view, takeover, tools and
 * metrics are the desktop's (worker/src/desktop, shared with replay), the model requests and their
 * retry policy the model stack's (worker/src/models); the loop itself is loop.ts.
 */
import { readFileSync } from 'node:fs';
import type { RunnerContext, RunnerOutcome } from '../runner.ts';
import { apiOf } from '../../models/conversation.ts';
import { loadPromptFolder, type PromptFolder } from '../../desktop/prompt.ts';
import { Loop } from './loop.ts';
import { budgets, DesktopRunner, ended, onDesktop } from '../../desktop/session.ts';

export class ComputerUseRunner extends DesktopRunner {
  async run(ctx: RunnerContext): Promise<RunnerOutcome> {
    const { spec } = ctx;
    if (!spec.model)
      return ended(
        'failed',
        `flow "${spec.flow.name}" has no provider: a computer-use run needs \`provider:\` (openai, anthropic, or an OpenAI-compatible server)`,
      );
    if (!spec.flow.prompt)
      return ended('failed', `flow "${spec.flow.name}" has no prompt folder (prompts/execution_agent)`);
    let prompt: PromptFolder;
    let card: string;
    try {
      prompt = loadPromptFolder(spec.flow.prompt);
      card = readFileSync(spec.card.path, 'utf8');
    } catch (err) {
      return ended('failed', (err as Error).message);
    }
    const api = apiOf(spec.model.provider, spec.flow.computerUse?.api);
    const model = spec.model.model ?? prompt.config.llm.model ?? 'gpt-5.2-codex';
    return onDesktop(ctx, this.abort, HUD_TEXT, ({ region, guard, artifacts, onShot }) =>
      new Loop(
        ctx,
        prompt,
        card,
        api,
        model,
        artifacts,
        this.abort.signal,
        guard,
        budgets(ctx, region, undefined, onShot),
      ).run(),
    );
  }
}

/** The takeover HUD's text (the person's UI, not the model's prompt). */
const HUD_TEXT = 'Runboard: an agent is in control of this desktop. Press Esc to take over.';
