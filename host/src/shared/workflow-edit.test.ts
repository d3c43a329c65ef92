import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Workflow } from '@runboard/supervisor/protocol';
import { renameParam } from './workflow-edit.ts';

const FIXTURE = new URL('../../../tests/fixtures/workflows/form-replay/schema.json', import.meta.url);

describe('renaming a parameter in the editor', () => {
  it('renames its templates in a subtask’s outcome check too (replay checks it with the new name)', () => {
    const w = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Workflow;
    expect(w.plan.subtasks[0]!.outcome_check).toEqual({ role: 'text', name: 'Name', value: '{name}' });
    const r = renameParam(w, 0, 'person');
    expect(r.plan.subtasks[0]!.outcome_check).toEqual({ role: 'text', name: 'Name', value: '{person}' });
    expect(r.plan.subtasks[0]!.steps[1]!.action_value).toBe('{person}');
  });
});
