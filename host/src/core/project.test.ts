import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FlowSpec } from '@runboard/supervisor/protocol';
import { flowSpec } from './launch.ts';
import { loadCard, loadConfig, parseCard, parseConfig } from './project.ts';

describe('config.yaml', () => {
  it('reads the minimum format, with defaults and durations', () => {
    const c = parseConfig(
      'c.yaml',
      'version: 1\nflows:\n  shell: { runner: command, cap: 2, timeout: 10m, killGrace: 500ms }\n',
    );
    expect(c.scheduler.maxConcurrency).toBe(4);
    expect(c.flows.shell).toMatchObject({ runner: 'command', cap: 2, timeout: 600_000, killGrace: 500 });
  });

  it("passes a codex flow's agentSandbox on to the supervisor's FlowSpec", () => {
    const c = parseConfig(
      'c.yaml',
      'version: 1\nflows:\n  impl: { runner: codex, provider: openai, readOnly: true, sandbox: { agentSandbox: true } }\n',
    );
    const spec = FlowSpec.parse(flowSpec('impl', c.flows.impl!, '/p'));
    expect(spec).toMatchObject({ runner: 'codex', readOnly: true, sandbox: { agentSandbox: true } });
  });

  it('reads sandbox.askDeletes and deletable, refusing a deletable folder that leaves the workspace', () => {
    const c = parseConfig(
      'c.yaml',
      'version: 1\nflows:\n  s: { runner: command, sandbox: { askDeletes: true, deletable: [build] } }\n',
    );
    const spec = FlowSpec.parse(flowSpec('s', c.flows.s!, '/p'));
    expect(spec.sandbox).toMatchObject({ askDeletes: true, deletable: ['build'] });
    for (const bad of ['/etc', '../x', 'a/../../b'])
      expect(() =>
        parseConfig(
          'c.yaml',
          `version: 1\nflows:\n  s: { runner: command, sandbox: { deletable: [${JSON.stringify(bad)}] } }\n`,
        ),
      ).toThrow(/relative to the workspace and stays inside it/);
  });

  it("passes a flow's sandbox.udp on to the supervisor's FlowSpec", () => {
    const c = parseConfig(
      'c.yaml',
      'version: 1\nflows:\n  web: { runner: command, sandbox: { tcpPorts: [443], udp: true } }\n',
    );
    expect(FlowSpec.parse(flowSpec('web', c.flows.web!, '/p')).sandbox).toEqual({
      tcpPorts: [443],
      udp: true,
    });
    expect(() =>
      parseConfig('c.yaml', 'version: 1\nflows:\n  web: { runner: command, sandbox: { udp: yes-please } }\n'),
    ).toThrow(/flows\.web\.sandbox\.udp/);
  });

  it("reads a flow's sandbox.tmpSize: a size, or a share of the memory up to 100%", () => {
    const tmp = (size: string) =>
      parseConfig(
        'c.yaml',
        `version: 1\nflows:\n  s: { runner: command, sandbox: { tmpSize: "${size}" } }\n`,
      );
    for (const ok of ['512m', '2g', '4096k', '1', '25%', '100%'])
      expect(FlowSpec.parse(flowSpec('s', tmp(ok).flows.s!, '/p')).sandbox?.tmpSize).toBe(ok);
    for (const bad of ['101%', '300%', '0%', '0', '2t', '1.5g', '%', '-1m'])
      expect(() => tmp(bad), bad).toThrow(/flows\.s\.sandbox\.tmpSize/);
    expect(() => tmp('300%')).toThrow(/at most 100%/);
  });

  it("reads a flow's sandbox.memory: a size of at least 64m, or a share of the memory", () => {
    const mem = (size: string) =>
      parseConfig('c.yaml', `version: 1\nflows:\n  s: { runner: command, sandbox: { memory: "${size}" } }\n`);
    for (const ok of ['512m', '4g', '65536k', '50%', '100%'])
      expect(FlowSpec.parse(flowSpec('s', mem(ok).flows.s!, '/p')).sandbox?.memory).toBe(ok);
    for (const bad of ['101%', '0%', '512', '2t', '1.5g', '-1m'])
      expect(() => mem(bad), bad).toThrow(/flows\.s\.sandbox\.memory/);
    expect(() => mem('32m')).toThrow(/at least 64m/);
  });

  it('a codex flow gets its own sandbox where possible by default; false turns it off; other runners get none', () => {
    const cfg = parseConfig(
      'c.yaml',
      'version: 1\nflows:\n  a: { runner: codex, provider: openai }\n  b: { runner: codex, provider: openai, sandbox: { agentSandbox: false } }\n  c: { runner: claude, provider: anthropic }\n',
    );
    expect(flowSpec('a', cfg.flows.a!, '/p').sandbox).toEqual({ agentSandbox: 'auto' });
    expect(flowSpec('b', cfg.flows.b!, '/p').sandbox).toEqual({ agentSandbox: false });
    expect(flowSpec('c', cfg.flows.c!, '/p').sandbox).toBeUndefined();
  });

  it('says what is wrong and where', () => {
    expect(() => parseConfig('c.yaml', 'version: one\nflows: {}\n')).toThrow(
      /c\.yaml: invalid config: version: expected a whole number such as 2 \(got "one"\)/,
    );
    expect(() => parseConfig('c.yaml', 'flows: {}\n')).toThrow(/version: missing/);
    expect(() => parseConfig('c.yaml', 'version: 1\nflows:\n  shell: { runner: rocket }\n')).toThrow(
      /flows\.shell\.runner/,
    );
    expect(() =>
      parseConfig('c.yaml', 'version: 1\nflows:\n  shell: { runner: command, timeout: soon }\n'),
    ).toThrow(/a duration such as/);
    expect(() => parseConfig('c.yaml', 'version: [1\n')).toThrow(/not valid YAML/);
    const cu = (live: string): string =>
      `version: 1\nflows:\n  d: { runner: computer-use, computerUse: { privateDisplay: true, liveFrameMs: ${live} } }\n`;
    expect(() => parseConfig('c.yaml', cu('50'))).toThrow(
      /liveFrameMs is 0 \(no live view\) or 100\.\.60000 ms/,
    );
    expect(parseConfig('c.yaml', cu('0')).flows.d!.computerUse!.liveFrameMs).toBe(0);
    expect(parseConfig('c.yaml', cu('500')).flows.d!.computerUse!.liveFrameMs).toBe(500);
  });
});

describe('cards', () => {
  it('parses front matter and body, resolving the workspace against the project', () => {
    const card = parseCard(
      '/p/cards/a.md',
      '---\ntitle: A\nflow: shell\nworkspace: ../ws\ncommand: [ls, -l]\n---\n# Task\nDo it.\n',
      '/p',
    );
    expect(card.front).toMatchObject({ title: 'A', flow: 'shell', command: ['ls', '-l'] });
    expect(card.workspace).toBe('/ws');
    expect(card.body).toBe('# Task\nDo it.\n');
  });

  it('refuses a card without front matter, title or flow, with the reason', () => {
    expect(() => parseCard('/p/a.md', '# Task\n', '/p')).toThrow(/no front matter/);
    expect(() => parseCard('/p/a.md', '---\nflow: shell\n---\n', '/p')).toThrow(/title/);
    expect(() => parseCard('/p/a.md', '---\ntitle: A\nstatus: flying\nflow: x\n---\n', '/p')).toThrow(
      /status/,
    );
  });
});

describe('reading a card or config from the CLI', () => {
  it('refuses a FIFO or a directory at once, saying what it is (no hang, no bare EISDIR)', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rb-project-'));
    try {
      execFileSync('mkfifo', [path.join(dir, 'card.md')]);
      expect(() => loadCard(path.join(dir, 'card.md'), dir)).toThrow(
        /card\.md: cannot read the card file: a FIFO \(named pipe\), not a regular file/,
      );
      mkdirSync(path.join(dir, 'config.yaml'));
      expect(() => loadConfig(dir)).toThrow(/config\.yaml: cannot read it \(a directory, not a regular file/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
