import { describe, expect, it } from 'vitest';
import type { CardView, Column } from '../shared/board-types.ts';
import { notesBetween } from './notify.ts';

const card = (id: string, column: Column, lastError?: string): CardView => ({
  id,
  file: `cards/${id}.md`,
  title: id.toUpperCase(),
  flow: 'shell',
  column,
  locked: column === 'running',
  ...(lastError ? { lastError } : {}),
});

describe('notesBetween', () => {
  it('tells of runs that ended and cards that came to need input, nothing else', () => {
    const before = new Map<string, Column>([
      ['a', 'running'],
      ['b', 'running'],
      ['c', 'running'],
      ['d', 'queued'],
      ['e', 'backlog'],
    ]);
    const notes = notesBetween(before, [
      card('a', 'done'),
      card('b', 'failed', 'command exited with code 1'),
      card('c', 'needs-input'),
      card('d', 'running'),
      card('e', 'queued'),
      card('new', 'done'),
    ]);
    expect(notes).toEqual([
      { id: 'a', title: 'Run finished: A', body: 'Now in Done.' },
      { id: 'b', title: 'Run failed: B', body: 'command exited with code 1' },
      { id: 'c', title: 'Needs input: C', body: 'The run asks a question: answer it on the board.' },
    ]);
  });
});
