import { describe, expect, it } from 'vitest';
import { gateExtraction } from './extraction.ts';

const GOOD = `TaskDetected: true
Status: TASK_FOUND
NoTaskReason: none

# Task
Fill the sign-up form with the name Ada and submit it.

## Steps
- Open the form.

## Questions
- Which email address should be used?
- [ ] Should the newsletter box stay ticked?
`;

describe('the extraction gate', () => {
  it('keeps the task from # Task on, without the control fields, and counts open questions', () => {
    const g = gateExtraction('```markdown\n' + GOOD + '```\n');
    expect(g.ok).toBe(true);
    if (!g.ok) return;
    expect(g.taskDetected).toBe(true);
    expect(g.status).toBe('TASK_FOUND');
    expect(g.markdown.startsWith('# Task\n')).toBe(true);
    expect(g.markdown).not.toMatch(/TaskDetected|NoTaskReason|^Status:/m);
    expect(g.questions).toBe(2);
  });

  it('refuses an answer that lacks a part of the contract, naming what is missing', () => {
    const noQuestions = GOOD.replace(/## Questions[\s\S]*$/, '');
    expect(gateExtraction(noQuestions)).toEqual({
      ok: false,
      why: expect.stringContaining('## Questions') as string,
    });
    const noFlags = GOOD.replace(/^TaskDetected.*\n/m, '').replace(/^NoTaskReason.*\n/m, '');
    const g = gateExtraction(noFlags);
    expect(g.ok).toBe(false);
    if (!g.ok) expect(g.why).toMatch(/TaskDetected, NoTaskReason/);
    expect(gateExtraction('   ').ok).toBe(false);
    expect(gateExtraction(GOOD.replace('# Task', '## Task')).ok).toBe(false);
  });

  it('reads TaskDetected: false as no task, and refuses a value that is neither', () => {
    const none = gateExtraction(
      GOOD.replace('TaskDetected: true', 'TaskDetected: false').replace(
        'NoTaskReason: none',
        'NoTaskReason: only idle desktop',
      ),
    );
    expect(none.ok && none.taskDetected).toBe(false);
    expect(none.ok && none.noTaskReason).toBe('only idle desktop');
    expect(gateExtraction(GOOD.replace('TaskDetected: true', 'TaskDetected: maybe')).ok).toBe(false);
  });

  it('takes bold or bulleted control fields as models write them', () => {
    const g = gateExtraction(
      GOOD.replace('TaskDetected: true', '**TaskDetected:** true').replace(
        'Status: TASK_FOUND',
        '- Status: TASK_FOUND',
      ),
    );
    expect(g.ok && g.taskDetected).toBe(true);
    expect(g.ok && g.status).toBe('TASK_FOUND');
  });
});
