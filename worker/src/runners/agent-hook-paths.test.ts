import { describe, expect, it } from 'vitest';
import { toolAsks } from './agent-hook-paths.ts';

const place = {
  cwd: '/ws/repo',
  own: ['/ws/repo', '/run/home', '/run/tmp', '/tmp', '/dev'],
  home: '/run/home',
  tmpdir: '/run/tmp',
};
const asks = (tool: string, input: unknown) => toolAsks(tool, input, place);
const bash = (command: string) => asks('Bash', { command });

describe('toolAsks: what a tool call would touch outside the run’s own trees', () => {
  it('file tools: their path, exactly; inside the workspace, HOME, TMPDIR or /tmp nothing', () => {
    expect(asks('Write', { file_path: '/out/report.md', content: 'x' })).toEqual([
      { kind: 'write', path: '/out/report.md' },
    ]);
    expect(asks('Edit', { file_path: '/ws/repo/../other/a.ts' })).toEqual([
      { kind: 'write', path: '/ws/other/a.ts' },
    ]);
    expect(asks('Read', { file_path: '/data/in.csv' })).toEqual([{ kind: 'read', path: '/data/in.csv' }]);
    expect(asks('NotebookEdit', { notebook_path: '/nb/a.ipynb' })).toEqual([
      { kind: 'write', path: '/nb/a.ipynb' },
    ]);
    expect(asks('Grep', { pattern: 'x', path: '/srv/logs' })).toEqual([{ kind: 'read', path: '/srv/logs' }]);
    expect(asks('Glob', { pattern: '/etc/**/*.conf' })).toEqual([{ kind: 'read', path: '/etc' }]);
    for (const p of ['/ws/repo/a.ts', 'src/b.ts', '/run/home/.cache/x', '/run/tmp/y', '/tmp/z'])
      expect(asks('Write', { file_path: p })).toEqual([]);
    expect(asks('TodoWrite', { todos: [] })).toEqual([]);
  });

  it('shell: redirects and writing tools are writes, other paths reads, relative names inside cwd nothing', () => {
    expect(bash("printf 'a,b\\n' > /out/data.csv && echo exported")).toEqual([
      { kind: 'write', path: '/out/data.csv' },
    ]);
    expect(bash('cat /data/in.csv | sort >> ~/sorted.txt')).toEqual([{ kind: 'read', path: '/data/in.csv' }]);
    expect(bash('cp notes.md /out/')).toEqual([{ kind: 'write', path: '/out' }]);
    expect(bash('mkdir -p /srv/a /srv/b; touch "/srv/with space"')).toEqual([
      { kind: 'write', path: '/srv/a' },
      { kind: 'write', path: '/srv/b' },
      { kind: 'write', path: '/srv/with space' },
    ]);
    expect(bash('dd if=/dev/zero of=/out/blob bs=1 count=1')).toEqual([{ kind: 'write', path: '/out/blob' }]);
    expect(bash("sed -i 's/a/b/' /etc/hosts")).toEqual([{ kind: 'write', path: '/etc/hosts' }]);
    expect(bash('cat ../../secret.txt')).toEqual([{ kind: 'read', path: '/secret.txt' }]);
    expect(bash('git push origin main')).toEqual([]);
    expect(bash('make 2>&1 > build.log; ls > /dev/null')).toEqual([]);
    expect(bash('echo hi > $HOME/x; cat $TMPDIR/y')).toEqual([]);
    // a path written and read is asked once, as a write
    expect(bash('cat /out/a > /out/a.bak; cat /out/a.bak > /out/a')).toEqual([
      { kind: 'write', path: '/out/a.bak' },
      { kind: 'write', path: '/out/a' },
    ]);
  });

  it('shell: what it cannot know is not asked (the jail still refuses it)', () => {
    expect(bash('cat $SECRET_DIR/x')).toEqual([]);
    expect(bash('cat "$(pwd)/../x"')).toEqual([]);
  });

  it('codex: its shell tool (command string or argv) and apply_patch (every file the patch names)', () => {
    expect(asks('Bash', { command: ['bash', '-lc', 'echo x > /out/f'] })).toEqual([
      { kind: 'write', path: '/out/f' },
    ]);
    expect(asks('exec_command', { cmd: 'tee /out/g < in.txt' })).toEqual([{ kind: 'write', path: '/out/g' }]);
    const patch = [
      '*** Begin Patch',
      '*** Update File: src/a.ts',
      '@@',
      '-x',
      '+y',
      '*** Add File: /out/new.md',
      '+hello',
      '*** Delete File: ../old.txt',
      '*** End Patch',
    ].join('\n');
    expect(asks('apply_patch', { command: patch })).toEqual([
      { kind: 'write', path: '/out/new.md' },
      { kind: 'write', path: '/ws/old.txt' },
    ]);
  });
});
