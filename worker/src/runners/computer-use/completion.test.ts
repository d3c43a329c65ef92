import { describe, expect, it } from 'vitest';
import { parseCompletion } from './completion.ts';

describe('completion JSON', () => {
  it('accepts the contract, in a code fence too, and drops "None." questions', () => {
    expect(parseCompletion('{"status":"SUCCESS","summary":"s","error":"","questions":[]}')).toEqual({
      status: 'SUCCESS',
      summary: 's',
      error: '',
      questions: [],
    });
    const c = parseCompletion(
      '```json\n{"status":"NEEDS_CLARIFICATION","summary":"x","questions":["a?","None."]}\n```',
    );
    expect(c).toMatchObject({ status: 'NEEDS_CLARIFICATION', questions: ['a?'] });
  });
  it('rejects what is not the contract', () => {
    expect(parseCompletion('')).toMatch(/empty/);
    expect(parseCompletion('done!')).toMatch(/no JSON/);
    expect(parseCompletion('{"status": "DONE"}')).toMatch(/not SUCCESS/);
    expect(parseCompletion('{"status": ')).toMatch(/no JSON|not valid/);
  });
});
