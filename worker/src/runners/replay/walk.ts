/**
 * How replay walks a subtask's steps, as pure decisions: what it asks the model when its locator could
 * not do a step (or read an extract, or see the expected outcome), where the walk goes after the
 * model's turn, and the questions a subtask that did not get done leaves for the person. replay.ts
 * carries the walk out; nothing here touches the desktop or a model.
 */
import type { OutcomeCheck } from '@runboard/supervisor/protocol';
import type { PlanStep, PlanSubtask } from './plan.ts';

/** What the model did in a turn: an action, a document read (the step is still to do), or `done`. */
export type TurnKind = 'acted' | 'read' | 'done';

/**
 * Where the walk goes after a model turn on `step`: the next step, the same step again, or the end of
 * the subtask's steps (the model said its expected outcome is already there). An extract is done only
 * once the model gave its value (`done`); any other step once the model acted on it.
 */
export function nextAfterTurn(step: PlanStep, turn: TurnKind): 'next' | 'again' | 'steps-done' {
  if (step.action.type === 'extract') return turn === 'done' ? 'next' : 'again';
  if (turn === 'done') return 'steps-done';
  return turn === 'read' ? 'again' : 'next';
}

/** What replay asks the model for a step its locator could not do (`why`: the drift, in words). */
export function askForStep(step: PlanStep, why: string): string {
  const a = step.action;
  if (a.type === 'extract')
    return `Step ${step.n} is an extract (replay could not read it by itself: ${why}): read "${a.query}" off the screen and call done with it in \`value\`${a.candidates?.length ? ` (it is likely one of: ${a.candidates.join(', ')})` : ''}.`;
  return `Replay could not do step ${step.n} by itself: ${why}. Do what step ${step.n} does on the screen as it is now (one action), or call done if the subtask's expected outcome is already there.`;
}

/** What replay asks the model when every step ran but the expected outcome (`want`) is not on screen. */
export function askForOutcome(want: string): string {
  return `Every step of this subtask ran, but its expected outcome is not on screen (${want}). Act to reach it (one action), call done once it is there, or stuck if it cannot be reached.`;
}

/** An outcome check in words, for the model and the card's question. */
export function describeCheck(c: OutcomeCheck): string {
  return [
    c.role && `a ${c.role}`,
    c.name !== undefined && `named "${c.name}"`,
    c.value !== undefined && `showing "${c.value}"`,
  ]
    .filter(Boolean)
    .join(' ');
}

/** A subtask that ended needs-input: the run's summary and the person's question. */
export interface Unfinished {
  summary: string;
  question: string;
}

/** The subtask's allowance of model turns ran out. */
export function tooManyTurns(sub: PlanSubtask, turns: number): Unfinished {
  return {
    summary: `stopped in subtask "${sub.text}": ${turns} model turns did not get it done`,
    question: `Replay could not finish the subtask "${sub.text}" (expected: ${sub.expectedOutcome || 'not stated'}) in ${turns} model turns. Has the app changed? Edit the workflow, or say how it should be done.`,
  };
}

/** How many times the model may say `done` while the expected outcome is not on screen. */
export const FALSE_DONE_LIMIT = 2;

/** The model said the subtask was done FALSE_DONE_LIMIT times; the screen says otherwise. */
export function outcomeNeverAppeared(sub: PlanSubtask, want: string): Unfinished {
  return {
    summary: `subtask "${sub.text}": its expected outcome never appeared (${want})`,
    question: `Replay finished the steps of "${sub.text}" but its expected outcome never appeared (${want}); the model said it was done, the screen says otherwise. What should happen here?`,
  };
}
