import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readJailStatus, type JailStatus } from './jail-status.ts';

async function read(lines: string[]): Promise<{ ok: JailStatus[]; bad: string[] }> {
  const s = new PassThrough();
  const ok: JailStatus[] = [];
  const bad: string[] = [];
  readJailStatus(
    s,
    (x) => ok.push(x),
    (why) => bad.push(why),
  );
  s.end(lines.join('\n') + '\n');
  await new Promise((r) => s.on('end', r).resume());
  await new Promise((r) => setImmediate(r));
  return { ok, bad };
}

describe('readJailStatus', () => {
  it('passes the lines the jail writes, typed', async () => {
    const { ok, bad } = await read([
      '{"event":"started","pid":42,"containment":"pid-namespace","namespaceError":""}',
      '{"event":"sandbox","landlockAbi":7,"enforced":true,"fs":"landlock"}',
      '{"event":"exit","code":null,"signal":9,"rchar":1,"wchar":2,"readBytes":0,"writeBytes":0,"utimeMs":3,"stimeMs":4,"maxRssKb":5}',
    ]);
    expect(bad).toEqual([]);
    expect(ok.map((s) => s.event)).toEqual(['started', 'sandbox', 'exit']);
    expect(ok[2]).toMatchObject({ code: null, signal: 9 });
  });

  it('says what is wrong with a line that is not JSON or does not fit the protocol', async () => {
    const { ok, bad } = await read([
      'garbage',
      '{"event":"started","pid":"x","containment":"c"}',
      '{"event":"reboot"}',
    ]);
    expect(ok).toEqual([]);
    expect(bad[0]).toMatch(/not JSON: garbage/);
    expect(bad[1]).toMatch(/does not fit the protocol \(pid: /);
    expect(bad).toHaveLength(3);
  });
});
