import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseFlags, type FlagSpec } from './args.ts';

// The same answers as node:util's parseArgs (strict), for desktop-cli's kinds of option sets.
const CLICK: Record<string, FlagSpec> = {
  app: { type: 'string' },
  window: { type: 'string' },
  id: { type: 'string' },
  x: { type: 'string' },
  y: { type: 'string' },
  double: { type: 'boolean' },
};
const TYPE: Record<string, FlagSpec> = {
  text: { type: 'string' },
  key: { type: 'string' },
  delay: { type: 'string' },
  p: { type: 'boolean' },
  q: { type: 'boolean' },
};

const CASES: string[][] = [
  [],
  ['--id', '7'],
  ['--id=7', '--double'],
  ['--id', '7', '--id', '8'],
  ['--window', 'My App', '--app=firefox'],
  ['--x', '-5'],
  ['--x=-5', '--y', '10'],
  ['-x', '5', '-y', '6'],
  ['-x5'],
  ['-x', '-5'],
  ['-x'],
  ['--id'],
  ['--double=yes'],
  ['--nope'],
  ['-z'],
  ['-zx'],
  ['stray'],
  ['--', 'stray'],
  ['--', '--id'],
  ['-'],
  ['--id', '--'],
  ['--id', '--double'],
  ['--text', 'hello world'],
  ['hello', 'world'],
  ['--text=', '--key', 'ctrl+a'],
  ['-pq', '--text', 'a'],
  ['-pqx'],
  ['--', '-p'],
  ['--nope', 'x'],
  ['--text', '-'],
  ['--text', '--'],
  ['--=x'],
  ['--__proto__'],
];

function node(args: string[], options: Record<string, FlagSpec>, allowPositionals: boolean) {
  try {
    const r = parseArgs({ args, options, allowPositionals, strict: true });
    return { values: { ...r.values }, positionals: r.positionals };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

function ours(args: string[], options: Record<string, FlagSpec>, allowPositionals: boolean) {
  try {
    const r = parseFlags(args, options, allowPositionals);
    return { values: { ...r.values }, positionals: r.positionals };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

describe('parseFlags', () => {
  for (const [name, options, allowPositionals] of [
    ['without positionals', CLICK, false],
    ['with positionals', TYPE, true],
    ['a mixed set, without positionals', { ...CLICK, ...TYPE }, false],
  ] as const) {
    it(`answers as parseArgs does, ${name}`, () => {
      for (const args of CASES)
        expect(ours(args, options, allowPositionals), JSON.stringify(args)).toEqual(
          node(args, options, allowPositionals),
        );
    });
  }
});
