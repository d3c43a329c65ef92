import { describe, expect, it } from 'vitest';
import { HIDDEN, redactor } from './redact.ts';

describe('redactor', () => {
  it('replaces every value in strings, nested data, and keys', () => {
    const r = redactor({ pin: '4471', pass: 'hunter22' });
    expect(
      r({ message: 'typed 4471 and hunter22', data: { args: { text: 'x4471x' }, list: ['4471'], n: 4471 } }),
    ).toEqual({
      message: `typed ${HIDDEN} and ${HIDDEN}`,
      data: { args: { text: `x${HIDDEN}x` }, list: [HIDDEN], n: 4471 },
    });
    expect(r({ '4471': 1 })).toEqual({ [HIDDEN]: 1 });
  });
  it('replaces a longer value before one inside it', () => {
    expect(redactor({ a: '1234', b: '123456' })('123456')).toBe(HIDDEN);
  });
  it('leaves everything alone without values, and ignores values under 3 characters', () => {
    const v = { m: 'a 12 b' };
    expect(redactor(undefined)(v)).toBe(v);
    expect(redactor({ x: '12' })(v)).toEqual(v);
  });
});
