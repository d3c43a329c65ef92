import { describe, expect, it } from 'vitest';
import { answerQuestions, appendQuestions, parseQuestions } from './board-questions.ts';

describe('## Questions (seed format)', () => {
  it('replaces the - None. placeholder and keeps the rest of the body', () => {
    const body = '# Task\nDo it.\n\n## Questions\n- None.\n\n## Notes\nkeep me\n';
    const next = appendQuestions(body, ['Which branch?', 'Keep the old API?']);
    expect(next).toBe(
      '# Task\nDo it.\n\n## Questions\n- [ ] Which branch?\n- [ ] Keep the old API?\n\n## Notes\nkeep me\n',
    );
    expect(parseQuestions(next)).toEqual([
      { text: 'Which branch?', answered: false },
      { text: 'Keep the old API?', answered: false },
    ]);
  });

  it('creates the section at the end when there is none; does not repeat an open question', () => {
    const once = appendQuestions('# Task\nDo it.\n', ['Which branch?']);
    expect(once).toBe('# Task\nDo it.\n\n## Questions\n- [ ] Which branch?\n');
    const twice = appendQuestions(once, ['which  branch?', 'Second\nline two']);
    expect(twice).toBe('# Task\nDo it.\n\n## Questions\n- [ ] Which branch?\n- [ ] Second\n  line two\n');
    expect(parseQuestions(twice)[1]).toEqual({ text: 'Second\nline two', answered: false });
    expect(appendQuestions(twice, [])).toBe(twice);
  });

  it('appends after existing items (plain bullets count as open questions)', () => {
    const body = '# Task\nX\n\n## Questions\n- Old one?\n- [x] Done one?\n  Answer: yes\n';
    const next = appendQuestions(body, ['New one?']);
    expect(next).toBe(
      '# Task\nX\n\n## Questions\n- Old one?\n- [x] Done one?\n  Answer: yes\n- [ ] New one?\n',
    );
    expect(parseQuestions(next)).toEqual([
      { text: 'Old one?', answered: false },
      { text: 'Done one?', answered: true, answer: 'yes' },
      { text: 'New one?', answered: false },
    ]);
  });

  it('answers: ticks the item and writes Answer: under it (multi-line, replacing an earlier answer)', () => {
    const body = '## Questions\n- [ ] A?\n- [ ] B?\n  more of B\n\n## Next\n';
    const next = answerQuestions(body, [
      { index: 1, answer: 'two\nlines' },
      { index: 0, answer: 'one' },
    ]);
    expect(next).toBe(
      '## Questions\n- [x] A?\n  Answer: one\n- [x] B?\n  more of B\n  Answer: two\n    lines\n\n## Next\n',
    );
    expect(parseQuestions(next)).toEqual([
      { text: 'A?', answered: true, answer: 'one' },
      { text: 'B?\nmore of B', answered: true, answer: 'two\nlines' },
    ]);
    const again = answerQuestions(next, [{ index: 0, answer: 'uno' }]);
    expect(parseQuestions(again)[0]).toEqual({ text: 'A?', answered: true, answer: 'uno' });
    expect(() => answerQuestions(next, [{ index: 5, answer: 'x' }])).toThrow(/no question 5/);
  });

  it('structured questions: choices on an Options line, the recommended one marked; answering keeps them', () => {
    const body = appendQuestions('# Task\nX\n', [
      { question: 'Which account?', options: ['Personal', 'Work | shared'], recommended: 'Work | shared' },
      'Plain one?',
    ]);
    expect(body).toBe(
      '# Task\nX\n\n## Questions\n- [ ] Which account?\n  Options: Personal | Work / shared (recommended)\n- [ ] Plain one?\n',
    );
    expect(parseQuestions(body)[0]).toEqual({
      text: 'Which account?',
      answered: false,
      options: ['Personal', 'Work / shared'],
      recommended: 'Work / shared',
    });
    const answered = answerQuestions(body, [{ index: 0, answer: 'Personal' }]);
    expect(answered).toContain(
      '- [x] Which account?\n  Options: Personal | Work / shared (recommended)\n  Answer: Personal\n',
    );
    expect(parseQuestions(answered)[0]).toMatchObject({
      answered: true,
      answer: 'Personal',
      options: ['Personal', 'Work / shared'],
    });
    // the same question again (as text) is not added twice
    expect(appendQuestions(body, [{ question: 'which account?', options: ['A'] }])).toBe(body);
  });
});
