import { describe, expect, it } from 'vitest';
import type { PlanStep, PlanSubtask } from './plan.ts';
import {
  askForOutcome,
  askForStep,
  describeCheck,
  nextAfterTurn,
  outcomeNeverAppeared,
  tooManyTurns,
} from './walk.ts';

const click: PlanStep = { n: 4, intent: 'submit', action: { type: 'click', x: 1, y: 1, button: 'left' } };
const extract: PlanStep = {
  n: 6,
  intent: 'read the total',
  action: { type: 'extract', query: 'the total', candidates: ['41', '42'] },
};
const sub: PlanSubtask = {
  id: 's1',
  text: 'send the form',
  expectedOutcome: '',
  dependencies: [],
  steps: [],
};

describe("replay's walk through a subtask", () => {
  it('after a model turn: an action step moves on once acted on, ends the steps on done, stays after a read', () => {
    expect(nextAfterTurn(click, 'acted')).toBe('next');
    expect(nextAfterTurn(click, 'read')).toBe('again');
    expect(nextAfterTurn(click, 'done')).toBe('steps-done');
  });

  it('an extract moves on only once the model gave its value', () => {
    expect(nextAfterTurn(extract, 'done')).toBe('next');
    expect(nextAfterTurn(extract, 'acted')).toBe('again');
    expect(nextAfterTurn(extract, 'read')).toBe('again');
  });

  it('asks the model for the step the locator could not do, saying why', () => {
    expect(askForStep(click, 'push button "Send" moved')).toBe(
      'Replay could not do step 4 by itself: push button "Send" moved. Do what step 4 does on the screen as it is now (one action), or call done if the subtask\'s expected outcome is already there.',
    );
    expect(askForStep(extract, 'no label "Total"')).toBe(
      'Step 6 is an extract (replay could not read it by itself: no label "Total"): read "the total" off the screen and call done with it in `value` (it is likely one of: 41, 42).',
    );
    expect(askForOutcome('a label named "Sent"')).toContain('(a label named "Sent")');
  });

  it('says an outcome check and an unfinished subtask in words', () => {
    expect(describeCheck({ role: 'label', name: 'Sent', value: 'ok' })).toBe(
      'a label named "Sent" showing "ok"',
    );
    expect(describeCheck({ name: 'Sent' })).toBe('named "Sent"');
    expect(tooManyTurns(sub, 8)).toEqual({
      summary: 'stopped in subtask "send the form": 8 model turns did not get it done',
      question:
        'Replay could not finish the subtask "send the form" (expected: not stated) in 8 model turns. Has the app changed? Edit the workflow, or say how it should be done.',
    });
    expect(outcomeNeverAppeared(sub, 'named "Sent"').summary).toBe(
      'subtask "send the form": its expected outcome never appeared (named "Sent")',
    );
  });
});
