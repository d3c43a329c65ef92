import { describe, expect, it } from 'vitest';
import { parseNumstat } from './worktrees.ts';

describe('parseNumstat', () => {
  it('reads counts, binary files and renames from `git diff --numstat -z`', () => {
    const out = ['3\t1\tsrc/a.ts', '-\t-\timg.png', '2\t0\t', 'old.txt', 'new.txt', ''].join('\0');
    expect(parseNumstat(out)).toEqual({
      files: [
        { path: 'src/a.ts', added: 3, removed: 1 },
        { path: 'img.png', added: null, removed: null },
        { path: 'new.txt', added: 2, removed: 0 },
      ],
      added: 5,
      removed: 1,
    });
  });
});
