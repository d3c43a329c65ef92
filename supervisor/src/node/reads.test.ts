import { describe, expect, it } from 'vitest';
import { outermost } from './reads.ts';

describe('outermost', () => {
  it('keeps the trees that lie in no other, once each, in their order', () => {
    expect(
      outermost(['/usr', '/usr/bin', '/etc', '/work/app', '/work/app/dist', '/usr', '/work/application']),
    ).toEqual(['/usr', '/etc', '/work/app', '/work/application']);
  });

  it('keeps a tree whose name only starts like another', () => {
    expect(outermost(['/usr/lib64', '/usr/lib'])).toEqual(['/usr/lib64', '/usr/lib']);
  });

  it('takes / as holding everything', () => {
    expect(outermost(['/opt', '/'])).toEqual(['/']);
  });
});
