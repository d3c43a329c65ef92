import { describe, expect, it } from 'vitest';
import { matchSignature, type Candidate } from './match.ts';

const sig = { r: 'btn', t: 'Remove', b: [10, 100, 60, 30] as [number, number, number, number] };

describe('matchSignature', () => {
  it('finds the only element with the same role and title, even if it moved', () => {
    const now: Candidate[] = [{ i: 9, r: 'btn', t: 'Remove', b: [10, 300, 60, 30] }];
    expect(matchSignature(sig, 4, now)).toEqual({ ok: true, id: 9, moved: true });
  });

  it('tells look-alikes apart by place', () => {
    const now: Candidate[] = [
      { i: 4, r: 'btn', t: 'Remove', b: [12, 101, 60, 30] },
      { i: 5, r: 'btn', t: 'Remove', b: [80, 100, 60, 30] },
    ];
    expect(matchSignature(sig, 4, now)).toEqual({ ok: true, id: 4, moved: false });
  });

  it('refuses when the element is gone or when look-alikes all moved', () => {
    expect(matchSignature(sig, 4, [{ i: 4, r: 'txt', t: 'Remove', b: sig.b }])).toMatchObject({
      ok: false,
      reason: 'gone',
    });
    const moved: Candidate[] = [
      { i: 6, r: 'btn', t: 'Remove', b: [10, 140, 60, 30] },
      { i: 7, r: 'btn', t: 'Remove', b: [80, 140, 60, 30] },
    ];
    expect(matchSignature(sig, 4, moved)).toEqual({ ok: false, reason: 'ambiguous', candidates: [6, 7] });
  });
});
