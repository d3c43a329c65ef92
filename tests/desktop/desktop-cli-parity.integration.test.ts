// desktop-cli as a user of the public desktop-cli (mj1618/desktop-cli) would run it on Linux: every
// command and flag it documents, against our GTK form and Chromium on the test desktop, each checked
// by what the app shows afterwards (read back through AT-SPI), plus the error paths and an
// agent-format snapshot. The CLI is the bundle an agent runs, in a process of its own.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { desktop } from '../../native/src/index.ts';
import { allElements } from '../../native/src/desktop/compact.ts';
import { decodePng } from './png.ts';
import { DesktopSession, eventually, formApp } from './session.ts';

const TITLE = 'Parity Form';
const DEAD = 'Parity Dead Form';
const PASSWORD = 'parity-secret-pw';
let s: DesktopSession;
let holdDir: string;

beforeAll(async () => {
  s = await DesktopSession.start();
  holdDir = path.join(s.tmp, 'hold-keys');
  mkdirSync(holdDir);
  await s.startForm(TITLE, {}, ['--password', PASSWORD, '--hold-keys', holdDir]);
}, 60_000);

afterAll(async () => {
  await s?.stop();
  expect(s.leftovers(), 'processes the suite started and left running').toEqual([]);
});

/** The second form (its Submit does nothing), started by the first test that needs it: each test stands alone. */
let deadStarted: Promise<unknown> | undefined;
const deadForm = () => (deadStarted ??= s.startForm(DEAD, {}, ['--variant', 'dead-submit', '--x', '560']));

type Json = Record<string, unknown>;
const W = ['--window', TITLE];

function ok(args: string[], input?: string): Json {
  const r = s.run(args, s.env, input);
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r.json as Json;
}

async function status(title = TITLE): Promise<string> {
  const els = allElements((await desktop.read({ title, visibleOnly: false })).elements);
  return els.find(
    (e) => e.role === 'label' && /^(status|clicked|subscribe|scrolled|volume|removed)/.test(e.name),
  )!.name;
}

async function field(name: string, title = TITLE): Promise<string | undefined> {
  const els = allElements((await desktop.read({ title })).elements);
  return els.find((e) => e.name === name && (e.role === 'text' || e.role === 'password text'))?.value;
}

const waitStatus = async (want: string | RegExp, title = TITLE) =>
  expect(
    await eventually(async () => {
      const st = await status(title);
      return typeof want === 'string' ? st === want : want.test(st);
    }, 5000),
    `status ${String(want)} (it is "${await status(title)}")`,
  ).toBe(true);

describe('the agent format', () => {
  it('prints one line per element an agent can act on, with ids, refs, bounds and states (snapshot)', () => {
    // The first read of the fresh form: nothing has moved or been typed yet.
    const r = s.run(['read', ...W, '--format', 'agent']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.replace(/\(pid: \d+\)/, '(pid: N)')).toBe(
      [
        '# Parity Form - runboard-form (pid: N)',
        '',
        '[2|save-status] txt "Save status" (281,575,228,17) display val="Saved: never"',
        '[72|fruits/fruit] cell "Fruit" (53,298,456,25)',
        '[73|fruits/apple] cell "Apple" (55,324,452,21)',
        '[74|fruits/banana] cell "Banana" (55,347,452,21)',
        '[75|fruits/cherry] cell "Cherry" (55,370,452,21)',
        '[77|subscribe] chk "Subscribe" (53,232,456,22) unchecked',
        '[80|remove.1] btn "Remove" (53,258,88,34)',
        '[81|remove.2] btn "Remove" (149,258,88,34)',
        '[83|submit] btn "Submit" (53,192,80,34)',
        '[84|clear] btn "Clear" (141,192,68,34)',
        '[85|password] input "Password" (129,152,380,34) secret',
        '[87|email] input "Email" (129,112,380,34)',
        '[89|name] input "Name" (129,72,380,34) focused',
        '',
      ].join('\n'),
    );
    expect(r.stdout).not.toContain(PASSWORD);
  });

  it('yaml and json say the same; --flat gives refs and paths; --text filters; --prune drops empty groups', () => {
    const json = ok(['read', ...W, '--text', 'Submit', '--flat']);
    const y = s.run(['read', ...W, '--text', 'Submit', '--flat', '--format', 'yaml']);
    expect(y.code, y.stderr).toBe(0);
    const yaml = parseYaml(y.stdout) as Json;
    expect({ ...yaml, ts: 0 }).toEqual({ ...json, ts: 0 });
    const els = json.elements as Json[];
    expect(els.find((e) => e.r === 'btn')).toMatchObject({ t: 'Submit', ref: 'submit', a: ['press'] });
    expect(els.every((e) => typeof e.p === 'string' && String(e.p).endsWith(String(e.r)))).toBe(true);
    // The default read's JSON is made from the tree's JSON (the snapshot's) with the header around it:
    // byte for byte what JSON.stringify of the parsed answer gives, and what --pretty says.
    const plain = s.run(['read', ...W]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toBe(JSON.stringify(JSON.parse(plain.stdout)) + '\n');
    expect(Object.keys(JSON.parse(plain.stdout) as Json)).toEqual(['app', 'pid', 'window', 'ts', 'elements']);
    const all = JSON.stringify(ok(['read', ...W]));
    const pruned = JSON.stringify(ok(['read', ...W, '--prune']));
    expect(pruned.length).toBeLessThan(all.length);
    expect(pruned).toContain('"Submit"');
    const focused = ok(['read', ...W, '--focused']).elements as Json[];
    expect(focused).toHaveLength(1);
    expect(focused[0]).toMatchObject({ r: 'input', t: 'Name', f: true });
  });
});

describe('acting by text, ref and id, with the public output fields', () => {
  it('click --text presses the button: action, x, y, button, count, target', async () => {
    const r = ok(['click', ...W, '--text', 'Submit']);
    expect(r).toMatchObject({
      ok: true,
      action: 'click',
      button: 'left',
      count: 1,
      target: { r: 'btn', t: 'Submit' },
    });
    const t = r.target as { b: number[] };
    expect(r.x).toBe(Math.round(t.b[0]! + t.b[2]! / 2));
    await waitStatus('clicked Submit 1');
    expect(ok(['click', ...W, '--ref', 'clear', '--post-read'])).toMatchObject({
      action: 'click',
      state: expect.stringContaining('[83|submit] btn "Submit"') as unknown,
    });
    await waitStatus('clicked Clear 1');
  });

  it('click --text --near clicks the control nearest a label (in a direction), else just beside it', async () => {
    const focusedName = async () =>
      allElements((await desktop.read({ title: TITLE })).elements).find((e) => e.focused)?.name;
    // The labels sit left of their entries; an entry takes its label's name, the label is the anchor.
    for (const label of ['Name', 'Email']) {
      const r = ok(['click', ...W, '--text', label, '--near', '--near-direction', 'right']);
      expect(r).toMatchObject({
        ok: true,
        action: 'click',
        target: { r: 'input', t: label },
        near: { r: 'txt', t: label },
      });
      expect(await eventually(async () => (await focusedName()) === label, 5000), `${label} focused`).toBe(
        true,
      );
    }
    // Nothing interactive left of the labels: the click lands just left of the text.
    const beside = ok(['click', ...W, '--text', 'Email', '--near', '--near-direction', 'left']);
    expect(beside).toMatchObject({ ok: true, beside: 'left', near: { t: 'Email' } });
    expect(beside.target).toBeUndefined();
    const near = beside.near as { b: number[] };
    expect(beside.x).toBe(near.b[0]! - 10);
    // Bad input says what to do.
    const noText = s.run(['click', ...W, '--near']);
    expect(noText.code).toBe(2);
    expect(JSON.parse(noText.stderr)).toMatchObject({
      error: 'USAGE',
      message: expect.stringContaining('--text'),
    });
    const badDir = s.run(['click', ...W, '--text', 'Email', '--near-direction', 'sideways']);
    expect(badDir.code).toBe(2);
    expect(JSON.parse(badDir.stderr).message).toContain('left, right, up, down');
  });

  it("click, type and action add the window's display texts (read-only values) unless --no-display", () => {
    const args = ['click', ...W, '--text', 'Email', '--near', '--near-direction', 'right'];
    const r = ok(args);
    const display = r.display as Json[];
    expect(display.find((e) => e.t === 'Save status')).toMatchObject({
      r: 'txt',
      v: expect.stringMatching(/^Saved/) as unknown,
    });
    expect(display.every((e) => e.r === 'txt' && typeof e.v === 'string')).toBe(true);
    expect(ok([...args, '--no-display']).display).toBeUndefined();
    // No window named (a bare key): nothing to say it of.
    expect(ok(['type', '--key', 'End']).display).toBeUndefined();
  });

  it('refuses a text that matches several elements, or none, with the exit codes of ids', () => {
    const amb = s.run(['click', ...W, '--text', 'Remove']);
    expect(amb.code).toBe(8);
    expect(JSON.parse(amb.stderr)).toMatchObject({ error: 'ELEMENT_AMBIGUOUS' });
    const none = s.run(['click', ...W, '--text', 'No such button']);
    expect(none.code).toBe(7);
    expect(JSON.parse(none.stderr)).toMatchObject({ error: 'ELEMENT_NOT_FOUND' });
  });

  it('type --target types into the field, then the key; the field holds the text', async () => {
    const r = ok([
      'type',
      ...W,
      '--target',
      'Email',
      '--roles',
      'input',
      '--text',
      'ada@example.com',
      '--key',
      'tab',
    ]);
    expect(r).toMatchObject({
      ok: true,
      action: 'type+key',
      text: 'ada@example.com',
      key: 'tab',
      target: { t: 'Email' },
    });
    expect(await eventually(async () => (await field('Email')) === 'ada@example.com')).toBe(true);
    // A navigation key alone says where the focus went.
    const tab = ok(['type', ...W, '--key', 'shift+tab']);
    expect(tab).toMatchObject({ action: 'key', key: 'shift+tab', focused: { r: 'input', t: 'Email' } });
  });

  it('a navigation key reports the focus the app moved to, even when the app reads the key late', async () => {
    // The race made deterministic: the app is busy (its main loop held by --hold-keys) from the first
    // key it reads, so it has not handled the Tab when the command would read the focus, and it goes
    // on only once the command waits for it. Before the fix the command read at once: no focus.
    ok(['type', ...W, '--target', 'Email', '--roles', 'input', '--key', 'tab']);
    const focusedNow = async () => ((ok(['read', ...W, '--focused']).elements as Json[])[0] ?? {}).t;
    expect(await eventually(async () => (await focusedNow()) === 'Password')).toBe(true);
    writeFileSync(path.join(holdDir, 'hold'), '');
    let stderr = '';
    let stdout = '';
    try {
      const key = spawn(process.execPath, [s.cli, 'type', '--key', 'shift+tab'], {
        env: { ...s.env, RUNBOARD_DESKTOP_TRACE: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const exited = new Promise<number | null>((resolve) => key.on('exit', (code) => resolve(code)));
      let ended = false;
      void exited.then(() => (ended = true));
      key.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      key.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      // until the command waits for the app to handle the key (or, as before the fix, has answered)
      await eventually(async () => ended || stderr.includes('waiting for window'), 60_000);
      writeFileSync(path.join(holdDir, 'release'), '');
      expect(await exited, stderr).toBe(0);
    } finally {
      writeFileSync(path.join(holdDir, 'release'), '');
    }
    expect(JSON.parse(stdout), stderr).toMatchObject({
      action: 'key',
      key: 'shift+tab',
      focused: { r: 'input', t: 'Email' },
    });
  });

  it('type --text returns once the app has handled the text, even when the app reads it late', async () => {
    // As the navigation key above: the app is held from the first key it reads. The command must not
    // answer before the app has handled every key (a read right after it, or a screenshot in a run,
    // showed the text cut short: 'Ada Lovela', CI under load).
    ok(['set-value', ...W, '--text', 'Name', '--roles', 'input', '--value', '']);
    expect(await eventually(async () => (await field('Name')) === '')).toBe(true);
    rmSync(path.join(holdDir, 'release'), { force: true }); // an earlier test's, written after its hold ended
    writeFileSync(path.join(holdDir, 'hold'), '');
    let stderr = '';
    let ended = false;
    try {
      const typed = spawn(
        process.execPath,
        [s.cli, 'type', ...W, '--target', 'Name', '--roles', 'input', '--text', 'Held Lovelace'],
        { env: { ...s.env, RUNBOARD_DESKTOP_TRACE: '1' }, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      const exited = new Promise<number | null>((resolve) => typed.on('exit', (code) => resolve(code)));
      void exited.then(() => (ended = true));
      typed.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      await eventually(async () => ended || stderr.includes('waiting for window'), 60_000);
      expect(ended, `answered while the app had not read its keys:\n${stderr}`).toBe(false);
      writeFileSync(path.join(holdDir, 'release'), '');
      expect(await exited, stderr).toBe(0);
    } finally {
      writeFileSync(path.join(holdDir, 'release'), '');
    }
    expect(await field('Name')).toBe('Held Lovelace'); // at once: no wait for the app
  });

  it('set-value sets an entry, a slider and a check box through the accessibility API; a password is not echoed', async () => {
    expect(
      ok(['set-value', ...W, '--text', 'Name', '--roles', 'input', '--value', 'Grace Hopper']),
    ).toMatchObject({
      action: 'set-value',
      value: 'Grace Hopper',
      attribute: 'value',
      set: 'text',
    });
    expect(await eventually(async () => (await field('Name')) === 'Grace Hopper')).toBe(true);
    ok(['set-value', ...W, '--text', 'Volume', '--roles', 'other', '--value', '42']);
    await waitStatus('volume 42');
    ok(['set-value', ...W, '--text', 'Subscribe', '--value', 'true']);
    await waitStatus('subscribe on');
    const pw = s.run(['set-value', ...W, '--text', 'Password', '--value', 'new-secret-1']);
    expect(pw.code, pw.stderr).toBe(0);
    expect(pw.json).toMatchObject({ secret: true });
    expect(pw.stdout).not.toContain('new-secret-1');
    ok(['set-value', ...W, '--text', 'Subscribe', '--value', 'false']);
    await waitStatus('subscribe off');
  });

  it('action --action press performs the accessibility action; an element without it is refused (exit 10)', async () => {
    const r = ok(['action', ...W, '--text', 'Submit', '--action', 'press']);
    expect(r).toMatchObject({ ok: true, action: 'action', name: 'press', target: { t: 'Submit' } });
    await waitStatus(/^clicked Submit/);
    const none = s.run(['action', ...W, '--text', 'Fruits', '--roles', 'list', '--action', 'press']);
    expect(none.code).toBe(10);
    expect(JSON.parse(none.stderr)).toMatchObject({ error: 'ACTION_FAILED' });
  });

  it('hover moves the pointer to the element without clicking', async () => {
    const before = await status();
    const r = ok(['hover', ...W, '--text', 'Clear']);
    expect(r).toMatchObject({ ok: true, action: 'hover', target: { t: 'Clear' } });
    const p = await desktop.pointer();
    expect([p.x, p.y]).toEqual([r.x, r.y]);
    expect(await status()).toBe(before);
  });

  it('scroll and drag say direction, amount and both ends', () => {
    expect(ok(['scroll', ...W, '--direction', 'up', '--amount', '2', '--text', 'log line 01'])).toMatchObject(
      {
        ok: true,
        action: 'scroll',
        direction: 'up',
        amount: 2,
      },
    );
    const d = ok(['drag', ...W, '--from-text', 'Apple', '--to-text', 'Cherry']);
    expect(d).toMatchObject({ ok: true, action: 'drag' });
    expect(typeof d.from_x).toBe('number');
    expect(typeof d.to_y).toBe('number');
  });

  it('--verify says when a click changed nothing, after trying the accessibility action and an offset click', async () => {
    await deadForm();
    const dead = ok(['click', '--window', DEAD, '--text', 'Submit', '--verify', '--verify-delay', '150']);
    expect(dead).toMatchObject({ verified: false, retried: true, retry_method: 'offset-click' });
    const live = ok(['click', '--window', DEAD, '--text', 'Clear', '--verify', '--verify-delay', '150']);
    expect(live).toMatchObject({ verified: true });
    expect(live.retried).toBeUndefined();
    await waitStatus('clicked Clear 1', DEAD);
  });
});

describe('conditions: wait and assert', () => {
  it('assert passes (exit 0) and fails (exit 1, the result on stdout, the reason on stderr)', async () => {
    await desktop.focus({ title: TITLE });
    ok(['set-value', ...W, '--text', 'Email', '--roles', 'input', '--value', 'x@y.z']);
    expect(ok(['assert', ...W, '--text', 'Email', '--roles', 'input', '--value', 'x@y.z'])).toMatchObject({
      pass: true,
      element: { t: 'Email', v: 'x@y.z' },
    });
    const fail = s.run(['assert', ...W, '--text', 'Email', '--roles', 'input', '--value-contains', 'nope']);
    expect(fail.code).toBe(1);
    expect(fail.json).toMatchObject({ ok: false, pass: false });
    expect(JSON.parse(fail.stderr)).toMatchObject({ error: 'ASSERTION_FAILED' });
    expect(s.run(['assert', ...W, '--text', 'Submit', '--enabled']).code).toBe(0);
    expect(s.run(['assert', ...W, '--text', 'Subscribe', '--unchecked']).code).toBe(0);
    expect(s.run(['assert', ...W, '--text', 'Loading...', '--gone']).code).toBe(0);
    expect(s.run(['assert', ...W, '--text', 'Submit', '--gone']).code).toBe(1);
  });

  it('wait returns when the element appears, and times out with exit 1', () => {
    // The click and the wait run in one batch: the status appears after the click.
    const r = ok(
      ['do', ...W],
      '- click: { text: "Clear" }\n- wait: { for-text: "clicked Clear", for-role: txt, timeout: 10, interval: 50 }\n',
    );
    expect((r.results as Json[])[1]).toMatchObject({ ok: true, action: 'wait' });
    const t = s.run(['wait', ...W, '--for-text', 'never shown', '--timeout', '1', '--interval', '100']);
    expect(t.code).toBe(1);
    expect(t.json).toMatchObject({ ok: false, action: 'wait', timed_out: true });
    expect(JSON.parse(t.stderr)).toMatchObject({ error: 'TIMEOUT' });
    expect(ok(['wait', ...W, '--for-text', 'never shown', '--gone', '--timeout', '1'])).toMatchObject({
      ok: true,
    });
  });
});

describe('batches and forms: do, fill', () => {
  it('do runs the steps in order, with if-exists, try and sleep, and stops at a failed step (exit 1)', async () => {
    const steps = [
      '- set-value: { text: "Name", roles: input, value: "Batch" }',
      '- if-exists: { text: "No cookie banner here" }',
      '  then:',
      '    - click: { text: "Accept" }',
      '  else:',
      '    - click: { text: "Submit" }',
      '- try:',
      '    - click: { text: "Missing button" }',
      '- sleep: { ms: 10 }',
      '- read: { format: agent, roles: btn }',
      '- click: { text: "Missing again" }',
      '- click: { text: "Clear" }',
    ].join('\n');
    const r = s.run(['do', ...W], s.env, steps);
    expect(r.code).toBe(1);
    const out = r.json as { ok: boolean; steps: number; results: Json[] };
    expect(out).toMatchObject({ ok: false, action: 'do', steps: 7 });
    const byAction = out.results.map((x) => [x.action, x.ok]);
    expect(byAction).toEqual([
      ['set-value', true],
      ['if-exists', true],
      ['try', true],
      ['sleep', true],
      ['read', true],
      ['click', false],
    ]);
    expect(out.results[1]).toMatchObject({ matched: false, branch: 'else' });
    expect(String(out.results[4]!.state)).toContain('btn "Submit"');
    expect(await field('Name')).toBe('Batch');
    await waitStatus(/^clicked Submit/);
    // --stop-on-error=false runs the rest.
    const all = s.run(
      ['do', ...W, '--stop-on-error=false'],
      s.env,
      '- click: { text: "Missing" }\n- click: { text: "Clear" }\n',
    );
    expect((all.json as { results: Json[] }).results.map((x) => x.ok)).toEqual([false, true]);
    const bad = s.run(['do', ...W], s.env, '- frobnicate: {}\n');
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain('unknown step type');
  });

  it('fill sets fields from one read (flags, or YAML on stdin) and clicks submit', async () => {
    const r = ok([
      'fill',
      ...W,
      '--field',
      'Name=Ada Lovelace',
      '--field',
      'Email=ada@lovelace.org',
      '--submit',
      'Submit',
    ]);
    expect(r).toMatchObject({ ok: true, action: 'fill', fields_set: 2, submitted: { t: 'Submit' } });
    expect(await field('Name')).toBe('Ada Lovelace');
    expect(await field('Email')).toBe('ada@lovelace.org');
    const stdin =
      'fields:\n  - label: Name\n    value: From YAML\n  - label: Email\n    value: yaml@example.com\n    method: type\n';
    expect(ok(['fill', ...W], stdin)).toMatchObject({ fields_set: 2 });
    expect(await eventually(async () => (await field('Email')) === 'yaml@example.com')).toBe(true);
    expect(await field('Name')).toBe('From YAML');
  });
});

describe('find, observe, --since', () => {
  it('find searches every window and groups the hits by window', async () => {
    await deadForm();
    const r = ok(['find', '--text', 'Submit', '--roles', 'btn']);
    const wins = (r.matches as Json[]).map((m) => m.window).sort();
    expect(wins).toEqual([DEAD, TITLE].sort());
    expect(r.total).toBe(2);
  });

  it('read --since gives only what changed; observe prints the change as a JSON line', async () => {
    const before = ok(['read', ...W]);
    // ts has a one-second resolution: the diff needs a later second than the read it compares with.
    await eventually(async () => Math.floor(Date.now() / 1000) > (before.ts as number), 3000);
    ok(['click', ...W, '--text', 'Submit']);
    await waitStatus(/^clicked Submit/);
    const d = ok(['read', ...W, '--since', String(before.ts)]);
    const changed = (d.diff as { changed: { t?: string; changes: Json }[] }).changed;
    expect(
      changed.some((c) => Object.keys(c.changes).includes('t') && /clicked Submit/.test(c.t ?? '')),
    ).toBe(true);
    const agent = s.run(['read', ...W, '--since', String(d.ts), '--format', 'agent']);
    expect(agent.stdout).toMatch(/\[diff since \d+\]/);
    // observe in the background while a click changes the status.
    const obs = spawn(
      process.execPath,
      [s.cli, 'observe', ...W, '--interval', '100', '--duration', '4', '--ignore-bounds'],
      {
        env: s.env,
      },
    );
    let lines = '';
    obs.stdout.on('data', (c: Buffer) => (lines += c.toString()));
    const done = new Promise((res) => obs.once('exit', res));
    expect(await eventually(async () => lines.includes('"snapshot"'), 5000)).toBe(true);
    ok(['click', ...W, '--text', 'Clear']);
    await done;
    const events = lines
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Json);
    expect(events[0]).toMatchObject({ type: 'snapshot' });
    expect(events.at(-1)).toMatchObject({ type: 'done' });
    expect(
      events.some((e) => e.type === 'changed' && JSON.stringify(e.changes).includes('clicked Clear')),
    ).toBe(true);
  });
});

describe('clipboard, open, screenshot-coords', () => {
  it('clipboard write stays readable after desktop-cli exits; grab copies a window’s text', async () => {
    ok(['clipboard', 'write', 'copied by desktop-cli ✓']);
    // Another X client reads it: the selection is still owned after the command ended.
    const other = execFileSync('xclip', ['-selection', 'clipboard', '-o'], { env: s.env, encoding: 'utf8' });
    expect(other).toBe('copied by desktop-cli ✓');
    expect(ok(['clipboard', 'read'])).toMatchObject({ ok: true, text: 'copied by desktop-cli ✓' });
    ok(['clipboard', 'clear']);
    expect(ok(['clipboard', 'read']).text).toBe('');
    ok(['set-value', ...W, '--text', 'Name', '--roles', 'input', '--value', 'grab me']);
    ok(['click', ...W, '--text', 'Name', '--roles', 'input']);
    expect(ok(['clipboard', 'grab', ...W])).toMatchObject({ action: 'clipboard-grab', text: 'grab me' });
  });

  it('open hands a URL to the desktop’s handler (xdg-open) and waits for its window', async () => {
    // A handler for a scheme of our own: a .desktop entry that starts the form with the URL as title.
    const home = path.join(s.tmp, 'xdg');
    mkdirSync(path.join(home, 'data', 'applications'), { recursive: true });
    mkdirSync(path.join(home, 'config'), { recursive: true });
    writeFileSync(
      path.join(home, 'data', 'applications', 'runboard-open-test.desktop'),
      `[Desktop Entry]\nType=Application\nName=Open Test\nExec=/usr/bin/python3 ${formApp} --x 300 --title %u\nMimeType=x-scheme-handler/runboardtest;\n`,
    );
    writeFileSync(
      path.join(home, 'config', 'mimeapps.list'),
      '[Default Applications]\nx-scheme-handler/runboardtest=runboard-open-test.desktop\n',
    );
    const env = {
      ...s.env,
      XDG_DATA_HOME: path.join(home, 'data'),
      XDG_CONFIG_HOME: path.join(home, 'config'),
    };
    const r = s.run(['open', 'runboardtest://opened', '--wait', '--timeout', '20'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({
      ok: true,
      action: 'open',
      url: 'runboardtest://opened',
      window: 'runboardtest://opened',
    });
    const [w] = await desktop.listWindows({ title: 'runboardtest://opened' });
    expect(w).toBeDefined();
    process.kill(w!.pid, 'SIGTERM');
    expect(
      await eventually(
        async () => (await desktop.listWindows({ title: 'runboardtest://opened' })).length === 0,
        5000,
      ),
    ).toBe(true);
    const missing = s.run(['open', '--app', 'no-such-program-here']);
    expect(missing.code).toBe(10);
  });

  it('screenshot-coords boxes the elements in red and gives their centres', () => {
    const out = path.join(s.tmp, 'coords.png');
    const r = ok(['screenshot-coords', ...W, '--scale', '1', '--output', out]);
    const els = r.elements as { t?: string; x: number; y: number }[];
    const submit = els.find((e) => e.t === 'Submit')!;
    expect(submit).toBeDefined();
    const png = decodePng(readFileSync(out));
    const b = r.b as number[];
    // The label sits at the element's centre, on red (the Submit button is grey).
    const at = (x: number, y: number): [number, number, number] => {
      const o = ((y - b[1]!) * png.width + (x - b[0]!)) * 3;
      return [png.rgb[o]!, png.rgb[o + 1]!, png.rgb[o + 2]!];
    };
    const [red, green, blue] = at(submit.x, submit.y - 6); // the label's red margin above its text
    expect(red).toBeGreaterThan(200);
    expect(green + blue).toBeLessThan(120);
  });
});

describe('read --format screenshot', () => {
  it('gives the screenshot with [id] labels and the agent-format list in one answer', () => {
    const out = path.join(s.tmp, 'read-shot.png');
    const r = ok(['read', ...W, '--format', 'screenshot', '--screenshot-output', out]);
    expect(r).toMatchObject({ ok: true, action: 'read', window: TITLE, image: out, format: 'png' });
    const list = r.elements as string;
    expect(list).toContain('btn "Submit"');
    const submit = /\[(\d+)\|submit\] btn "Submit" \((\d+),(\d+),(\d+),(\d+)\)/.exec(list)!;
    expect(submit).not.toBeNull();
    const png = decodePng(readFileSync(out));
    expect([png.width, png.height]).toEqual([r.w, r.h]);
    // Scale 0.25 by default: a quarter of the window's size.
    const wins = ok(['list', '--windows']) as unknown as { title: string; bounds: number[] }[];
    const win = wins.find((w) => w.title === TITLE)!;
    expect(Math.abs(png.width - win.bounds[2]! / 4)).toBeLessThanOrEqual(2);
    // Red labels are drawn (the form itself has no red).
    let red = 0;
    for (let o = 0; o < png.rgb.length; o += 3)
      if (png.rgb[o]! > 200 && png.rgb[o + 1]! + png.rgb[o + 2]! < 120) red++;
    expect(red).toBeGreaterThan(20);
    // Without --screenshot-output: the image inline, base64.
    const inline = ok(['read', ...W, '--format', 'screenshot', '--scale', '0.5']);
    const bytes = Buffer.from(inline.image as string, 'base64');
    expect(decodePng(bytes).width).toBe(inline.w);
    // Other commands refuse it, saying where it works.
    const bad = s.run(['find', '--text', 'Submit', '--format', 'screenshot']);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stderr).message).toContain('read only');
  });
});

describe('errors: vanished window, stale id, no display, bad flags', () => {
  it('a window that is gone after the read: exit 5; a stale id: exit 7; no display: exit 3; bad flags: exit 2', async () => {
    const gone = 'Parity Gone Form';
    const w = await s.startForm(gone, {}, ['--x', '300']);
    const read = ok(['read', '--window', gone, '--compact']);
    const submit = (read.elements as { i: number; t?: string }[]).find((e) => e.t === 'Submit')!;
    process.kill(w.pid, 'SIGTERM');
    expect(
      await eventually(async () => (await desktop.listWindows({ title: gone })).length === 0, 5000),
    ).toBe(true);
    for (const cmd of [['click'], ['hover'], ['action'], ['set-value', '--value', 'x']]) {
      const r = s.run([...cmd, '--id', String(submit.i)]);
      expect(r.code, `${cmd[0]}: ${r.stderr}`).toBe(5);
    }
    expect(s.run(['click', ...W, '--id', '99999']).code).toBe(7);
    const noDisplay = { ...s.env, DISPLAY: '' };
    for (const cmd of [
      ['hover', '--x', '1', '--y', '1'],
      ['wait', ...W, '--for-text', 'x', '--timeout', '0'],
      ['find', '--text', 'x'],
      ['clipboard', 'read'],
    ]) {
      const r = s.run(cmd, noDisplay);
      expect(r.code, `${cmd[0]}: ${r.stderr}`).toBe(cmd[0] === 'wait' ? 1 : 3);
      expect(r.stderr).toContain(cmd[0] === 'wait' ? 'TIMEOUT' : 'NO_DISPLAY');
    }
    expect(s.run(['read', ...W, '--format', 'xml']).code).toBe(2);
    expect(s.run(['wait', ...W]).code).toBe(2);
    expect(s.run(['set-value', ...W, '--text', 'Name']).code).toBe(2);
  });

  it('--help lists every command, serve included', () => {
    const r = s.run(['--help']);
    for (const cmd of [
      'list',
      'read',
      'find',
      'click',
      'hover',
      'type',
      'set-value',
      'fill',
      'focus',
      'scroll',
      'drag',
      'action',
      'wait',
      'assert',
      'observe',
      'screenshot',
      'screenshot-coords',
      'clipboard',
      'open',
      'do',
      'serve',
    ])
      expect(r.stdout).toMatch(new RegExp(`^  desktop-cli ${cmd} `, 'm'));
  });
});

describe('Chromium', () => {
  const PAGE = 'Runboard Test Page - Chromium';
  beforeAll(async () => {
    s.spawnTestPage();
    const ready = await eventually(async () => {
      const tree = await desktop.read({ title: PAGE }).catch(() => undefined);
      return tree && allElements(tree.elements).some((e) => e.role === 'push button' && e.name === 'Go');
    }, 40_000);
    expect(ready, 'Chromium page with its web content in the tree').toBe(true);
  }, 60_000);

  it('reads the page in the agent format, clicks by text and types by target', async () => {
    const r = s.run(['read', '--window', PAGE, '--format', 'agent']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^\[\d+\|[^\]]*go\] btn "Go" \(/m);
    expect(r.stdout).toMatch(/lnk "Alpha"/);
    expect(r.stdout).not.toContain('chromium-secret-pw');
    ok(['click', '--window', PAGE, '--text', 'Go', '--roles', 'btn']);
    const pressed = async () =>
      allElements((await desktop.read({ title: PAGE })).elements).some((e) => e.name === 'pressed 1');
    expect(await eventually(pressed, 5000)).toBe(true);
    ok(['type', '--window', PAGE, '--target', 'Search', '--roles', 'input', '--text', 'parity']);
    expect(
      ok([
        'assert',
        '--window',
        PAGE,
        '--text',
        'Search',
        '--roles',
        'input',
        '--value',
        'parity',
        '--timeout',
        '5',
      ]),
    ).toMatchObject({ pass: true });
  });
});
