import { describe, expect, it } from 'vitest';
import { toQuestions } from './questions.ts';

describe('toQuestions', () => {
  it('keeps strings (not "None.") and the structured form; extra fields go, a stray recommendation too', () => {
    expect(
      toQuestions([
        ' Which branch? ',
        'None.',
        {
          id: 'acct',
          question: 'Which account?',
          options: ['Personal', 'Work'],
          recommended: 'Work',
          allow_freeform: true,
        },
        { question: 'Which size?', options: ['S', { label: 'M' }, ''], recommended: 'XL' },
        { title: 'not a question' },
        null,
      ]),
    ).toEqual([
      'Which branch?',
      { question: 'Which account?', options: ['Personal', 'Work'], recommended: 'Work' },
      { question: 'Which size?', options: ['S', 'M'] },
      '{"title":"not a question"}',
    ]);
    expect(toQuestions('not a list')).toEqual([]);
  });
});
