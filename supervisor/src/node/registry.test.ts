import { describe, expect, it } from 'vitest';
import { lastMarker } from './registry.ts';

describe('lastMarker', () => {
  const v1 = { logDir: '/l', jailPid: 0 };
  const v2 = { logDir: '/l', jailPid: 42 };

  it('takes the newest whole version of an appended marker', () => {
    expect(lastMarker(`${JSON.stringify(v1)}\n${JSON.stringify(v2)}\n`)).toEqual(v2);
  });

  it('skips a version a crash cut short, for the one before it', () => {
    expect(lastMarker(`${JSON.stringify(v1)}\n{"logDir":"/l","jai`)).toEqual(v1);
  });

  it("reads a fleet run's marker (one version, no newline)", () => {
    expect(lastMarker(JSON.stringify(v2))).toEqual(v2);
  });

  it('throws when no version is whole', () => {
    expect(() => lastMarker('')).toThrow();
    expect(() => lastMarker('{"logDir":')).toThrow();
  });
});
