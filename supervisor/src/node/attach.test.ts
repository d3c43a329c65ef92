import { describe, expect, it } from 'vitest';
import { utf8Boundary } from '@runboard/supervisor/run-output';

describe('utf8Boundary', () => {
  it('never cuts inside a multi-byte character', () => {
    const b = Buffer.from('a✓b世界🙂');
    for (let len = 0; len <= b.length; len++) {
      const cut = utf8Boundary(b, len);
      expect(cut).toBeLessThanOrEqual(len);
      expect(b.subarray(0, cut).toString('utf8')).not.toContain('\uFFFD');
      expect(len - cut).toBeLessThan(4);
    }
  });
});
