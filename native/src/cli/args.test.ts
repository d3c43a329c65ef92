import { describe, expect, it } from 'vitest';
import { button, centre, hasTarget, int, num, parse, parseBbox, rolesOf, targetOf } from './args.ts';
import { CliError } from './errors.ts';
import { stepArgs } from './steps.ts';

/** The CliError a call throws (its code and message), or undefined when it does not throw. */
function refusal(f: () => unknown): { code: string; message: string } | undefined {
  try {
    f();
  } catch (e) {
    if (e instanceof CliError) return { code: e.code, message: e.message };
    throw e;
  }
  return undefined;
}

describe('desktop-cli flag checks', () => {
  it('int takes integers within bounds and names the flag and the bounds otherwise', () => {
    expect(int(undefined, 'depth')).toBeUndefined();
    expect(int('3', 'depth', 0)).toBe(3);
    expect(refusal(() => int('1.5', 'depth', 0))).toEqual({
      code: 'USAGE',
      message: '--depth must be an integer >= 0',
    });
    expect(refusal(() => int('101', 'quality', 1, 100))?.message).toBe(
      '--quality must be an integer >= 1 <= 100',
    );
    expect(refusal(() => int(' ', 'x'))?.message).toBe('--x must be an integer');
  });

  it('num takes finite numbers in range', () => {
    expect(num('0.5', 'scale', 0.1, 1)).toBe(0.5);
    expect(refusal(() => num('2', 'scale', 0.1, 1))?.message).toBe('--scale must be a number from 0.1 to 1');
    expect(refusal(() => num('NaN', 'timeout', 0, 3600))?.code).toBe('USAGE');
  });

  it('rolesOf expands interactive and toggle, and names the known roles for an unknown one', () => {
    expect(rolesOf(undefined)).toBeUndefined();
    expect(rolesOf('btn, input')).toEqual(['btn', 'input']);
    expect(rolesOf('interactive')).toEqual(['input', 'other', 'chk', 'radio', 'list']);
    expect(rolesOf('toggle')).toEqual(['chk']);
    expect(rolesOf(' , ')).toBeUndefined();
    expect(refusal(() => rolesOf('buton'))?.message).toMatch(
      /^unknown role "buton" \(roles: .*btn.*, interactive\)$/,
    );
  });

  it('parseBbox wants x,y,w,h with a positive size', () => {
    expect(parseBbox('1,2,3,4')).toEqual([1, 2, 3, 4]);
    expect(parseBbox(undefined)).toBeUndefined();
    expect(refusal(() => parseBbox('1,2,0,4'))?.message).toBe(
      '--bbox must be x,y,w,h with a positive width and height',
    );
    expect(refusal(() => parseBbox('1,2,3'))?.code).toBe('USAGE');
  });

  it('button, centre and the window target', () => {
    expect(button(undefined)).toBe('left');
    expect(button('middle')).toBe('middle');
    expect(refusal(() => button('back'))?.message).toBe('--button must be left, right or middle');
    expect(centre([10, 20, 5, 5])).toEqual([13, 23]);
    const q = targetOf({ app: 'gedit', window: 'Notes', 'window-id': '7', pid: '42' });
    expect(q).toEqual({ app: 'gedit', title: 'Notes', windowId: 7, pid: 42 });
    expect(hasTarget(q)).toBe(true);
    expect(hasTarget(targetOf({}))).toBe(false);
    expect(refusal(() => targetOf({ pid: '0' }))?.message).toBe('--pid must be an integer >= 1');
  });
});

describe('desktop-cli flag parsing', () => {
  it('parses a command with its own option table; booleans take --x=false, --no-x and --x=true', () => {
    expect(parse('read', ['--app', 'gedit', '--flat', '--visible-only=false']).values).toEqual({
      app: 'gedit',
      flat: true,
      'visible-only': false,
    });
    expect(parse('read', ['--no-prune', '--exact=true']).values).toEqual({ prune: false, exact: true });
  });

  it('refuses an unknown flag, and positionals where the command takes none, as USAGE', () => {
    expect(refusal(() => parse('read', ['--colour', 'red']))?.code).toBe('USAGE');
    expect(refusal(() => parse('list', ['extra']))?.code).toBe('USAGE');
    expect(parse('type', ['hello', 'world']).positionals).toEqual(['hello', 'world']);
  });

  it('turns a do step map into flags', () => {
    expect(stepArgs({ text: 'OK', exact: true, prune: false, roles: ['btn', 'input'], _: 'x' })).toEqual({
      argv: ['--text', 'OK', '--exact', '--prune=false', '--roles', 'btn,input'],
      positionals: ['x'],
    });
    expect(stepArgs({ field: ['A=1', 'B=2'], skip: null }).argv).toEqual([
      '--field',
      'A=1',
      '--field',
      'B=2',
    ]);
    expect(refusal(() => stepArgs({ text: { nested: 1 } }))?.message).toBe(
      'step flag "text" must be a value, not a map',
    );
  });
});
