import { describe, expect, it } from 'vitest';
import { HostAd, whyNoHost } from './roster.ts';

const h = (name: string, flows: string[], workspaces: string[], v: number | null = 2): HostAd => ({
  name,
  flows,
  workspaces,
  capacity: 1,
  ...(v === null ? {} : { v }),
});

describe('whyNoHost', () => {
  const roster = [h('a', ['build', 'test'], ['.', 'ws']), h('b', ['test'], [])];

  it('finds a host that offers the flow with the workspace', () => {
    expect(whyNoHost(roster, 'build', 'ws')).toBeNull();
    expect(whyNoHost(roster, 'test', '.')).toBeNull();
  });

  it('names what each host offers, and the fix', () => {
    expect(whyNoHost(roster, 'deploy', '.')).toBe(
      'no host of the fleet offers flow "deploy" (a offers "build", "test"; b offers "test"): start one with `runboard fleet join … --flows deploy --workspace .=DIR`',
    );
    expect(whyNoHost([h('b', ['test'], [])], 'test', 'ws')).toBe(
      'no host of the fleet that offers flow "test" has workspace "ws" (b maps none): on a host, `runboard grant DIR` and join with `--workspace ws=DIR`',
    );
    expect(whyNoHost([], 'test', '.')).toMatch(/^no host of the fleet is up to run it/);
  });

  it('does not take a workspace of a host that does not offer the flow', () => {
    expect(whyNoHost(roster, 'test', 'elsewhere')).toMatch(/a maps "\.", "ws"; b maps none/);
  });

  it('refuses while a host of another release offers the flow, naming which side to upgrade', () => {
    // an older host says no version (releases before session 17): it would refuse the runs it takes
    const mixed = [...roster, h('elder', ['build'], ['ws'], null)];
    expect(whyNoHost(mixed, 'build', 'ws')).toBe(
      'elder runs fleet version 1, and this supervisor 2: a host of another Runboard release offering flow "build" would refuse the runs of it that it takes; every supervisor of a fleet must run the same release: upgrade elder (or stop that host)',
    );
    expect(whyNoHost(mixed, 'test', 'ws')).toBeNull(); // elder does not offer `test`
    expect(whyNoHost([...roster, h('next', ['build'], [], 3)], 'build', 'ws')).toMatch(
      /next runs fleet version 3, .*: upgrade this board's supervisor \(or stop that host\)$/,
    );
  });

  it('reads only entries of its shape (a Redis writer may write anything there)', () => {
    expect(HostAd.safeParse({ name: 'x', flows: 'all', workspaces: [], capacity: 1 }).success).toBe(false);
    expect(HostAd.safeParse({ name: '', flows: [], workspaces: [], capacity: 1 }).success).toBe(false);
    expect(HostAd.safeParse(h('ok', ['f'], ['.'])).success).toBe(true);
  });
});
