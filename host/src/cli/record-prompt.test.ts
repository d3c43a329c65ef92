import { describe, expect, it } from 'vitest';
import { parseAnswer } from './record-prompt.ts';

describe("the Ctrl+I prompt's answer", () => {
  it('is an extract with its candidates', () => {
    expect(parseAnswer('Extract\tthe order number\tA-1, B-2 ,\n')).toEqual({
      kind: 'extract',
      query: 'the order number',
      candidates: ['A-1', 'B-2'],
    });
  });
  it('is details for the next step', () => {
    expect(parseAnswer('Details\t opens the report \t\n')).toEqual({
      kind: 'details',
      note: 'opens the report',
    });
  });
  it('without a kind: candidates make an extract, else a note', () => {
    expect(parseAnswer('\tthe total\t12, 13\n')).toMatchObject({ kind: 'extract', candidates: ['12', '13'] });
    expect(parseAnswer('\tthe total\t\n')).toEqual({ kind: 'details', note: 'the total' });
    expect(parseAnswer(' \tthe total\t12\n')).toMatchObject({ kind: 'extract', candidates: ['12'] });
  });
  it('adds nothing without text', () => {
    expect(parseAnswer('Extract\t \tA\n')).toEqual({ kind: 'none' });
  });
});
