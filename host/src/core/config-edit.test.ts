import { describe, expect, it } from 'vitest';
import { addYamlListItem, setYamlValues } from './config-edit.ts';

const TEXT = `# my board
version: 1
scheduler:
  maxConcurrency: 4   # all flows together
  columnLimits: {done: 50}
flows:
  # quick ones
  shell: {runner: command, cap: 2} # inline
  slow:
    runner: command
    args: [a, "b"]
    cap: 2 # per flow

    # trailing comment
`;

describe('setYamlValues', () => {
  it('changes only the values set: comments, flow style and quoting stay byte for byte', () => {
    const out = setYamlValues(TEXT, [
      { path: ['scheduler', 'maxConcurrency'], value: 7 },
      { path: ['flows', 'shell', 'cap'], value: 1 },
      { path: ['flows', 'slow', 'cap'], value: 12 },
      { path: ['scheduler', 'columnLimits', 'done'], value: 0 },
    ]);
    expect(out).toBe(
      TEXT.replace('maxConcurrency: 4', 'maxConcurrency: 7')
        .replace('cap: 2}', 'cap: 1}')
        .replace('cap: 2 # per flow', 'cap: 12 # per flow')
        .replace('{done: 50}', '{done: 0}'),
    );
  });

  it('adds a missing key through the Document API, keeping comments and flow collections unpadded', () => {
    const out = setYamlValues(TEXT, [{ path: ['scheduler', 'columnLimits', 'failed'], value: 3 }]);
    expect(out).toContain('columnLimits: {done: 50, failed: 3}');
    expect(out).toContain('args: [a, "b"]');
    expect(out).toContain('# quick ones');
    expect(out).toContain('cap: 2 # per flow');
  });

  it('refuses text that is not YAML', () => {
    expect(() => setYamlValues('a: [', [])).toThrow(/not valid YAML/);
  });
});

describe('addYamlListItem', () => {
  it('adds to a list, creates a missing one, adds nothing twice, and keeps the comments', () => {
    const once = addYamlListItem(TEXT, ['flows', 'shell', 'sandbox', 'writable'], '/data/out');
    expect(once).toContain('# my board');
    expect(once).toContain('# per flow');
    expect(once).toMatch(/writable: \[\/data\/out\]/);
    const twice = addYamlListItem(once, ['flows', 'shell', 'sandbox', 'writable'], '/data/more');
    expect(twice).toMatch(/writable: \[\/data\/out, \/data\/more\]/);
    expect(addYamlListItem(twice, ['flows', 'shell', 'sandbox', 'writable'], '/data/out')).toBe(twice);
    expect(addYamlListItem(TEXT, ['flows', 'slow', 'sandbox', 'tcpPorts'], 5432)).toMatch(
      /sandbox:\n\s+tcpPorts:\n\s+- 5432/,
    );
  });
});
