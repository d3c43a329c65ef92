// A fleet's Redis password kept out of config and command lines (issue 28): the board's supervisor
// names a password stored with it (`redis.passwordSecret`, `runboard fleet password set NAME`), a host
// gets it in its supervisor's environment from `fleet join`'s file or stdin; both URLs carry none.
// With a real redis-server that asks for a password: a run goes through the fleet, and the password is
// found nowhere in the board's state root but its 0600 secret, nor on the host's command line.
import { spawnSync } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisPasswordFile, writeRedisPassword } from '@runboard/supervisor/secrets';
import { DIST, Harness } from '../helpers/harness.ts';
import { startHost } from './hosts.ts';
import { RedisServer } from './redis.ts';

let board: Harness;
let host: Harness;
let redis: RedisServer;
let bare: string;

beforeAll(async () => {
  board = await Harness.start();
  writeFileSync(path.join(board.root, 'card.md'), '---\ntitle: test card\n---\nSay hello.\n');
  redis = await RedisServer.start(path.join(board.root, 'redis'));
  bare = `redis://127.0.0.1:${redis.port}`;
  host = await startHost(bare, 'h1', ['shell'], 1, ['.'], { RUNBOARD_REDIS_PASSWORD: redis.password });
}, 90_000);

afterAll(async () => {
  await host?.stop().catch(() => undefined);
  await board?.client.setBackend({ backend: 'local' }).catch(() => undefined);
  await board?.stop();
  await redis?.stop();
});

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

describe('the Redis password is not in clear in config or on a command line', () => {
  it('a board supervisor naming an unstored password says how to store it', async () => {
    await expect(
      board.client.setBackend({ backend: 'redis', redisUrl: bare, redisPasswordSecret: 'fleet' }),
    ).rejects.toMatchObject({
      message: expect.stringMatching(
        /no Redis password stored as "fleet": store it with `runboard fleet password set fleet`/,
      ),
    });
  });

  it('stored as a secret on the board, from the environment on the host: a run goes through the fleet', async () => {
    writeRedisPassword(board.paths, 'fleet', redis.password);
    const file = redisPasswordFile(board.paths, 'fleet');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    await board.client.setBackend({ backend: 'redis', redisUrl: bare, redisPasswordSecret: 'fleet' });
    const rec = await board.run('echo via-fleet', { name: 'shell' });
    expect(rec.result.status, JSON.stringify(rec.result.termination)).toBe('succeeded');
    expect(rec.stdout).toContain('via-fleet');
    // nowhere at rest but the secret itself (backend.json names the secret; run markers name the URL)
    const holding = filesUnder(board.paths.root).filter((f) => readFileSync(f).includes(redis.password));
    expect(holding).toEqual([file]);
    // nor on the host supervisor's command line
    const cmdline = readFileSync(`/proc/${host.supervisor.pid}/cmdline`, 'utf8');
    expect(cmdline).not.toContain(redis.password);
  }, 90_000);

  it('`fleet join` refuses a password in --redis and a password file others can read; `fleet password set` stores 0600', () => {
    const cli = (args: string[], input?: string) =>
      spawnSync(process.execPath, [path.join(DIST, 'runboard.mjs'), ...args], {
        env: { ...process.env, RUNBOARD_HOME: path.join(board.root, 'cli-home') },
        encoding: 'utf8',
        ...(input !== undefined ? { input } : {}),
      });
    const inUrl = cli([
      'fleet',
      'join',
      '--redis',
      `redis://:${redis.password}@127.0.0.1:1`,
      '--flows',
      'shell',
    ]);
    expect(inUrl.status).not.toBe(0);
    expect(inUrl.stderr).toMatch(
      /--redis holds a password, which every user of this machine sees in the process list/,
    );
    const pwFile = path.join(board.root, 'pw');
    writeFileSync(pwFile, redis.password + '\n');
    chmodSync(pwFile, 0o644);
    const open = cli(['fleet', 'join', '--redis', bare, '--flows', 'shell', '--redis-password-file', pwFile]);
    expect(open.status).not.toBe(0);
    expect(open.stderr).toContain(`can be read by others (mode 644): chmod 600 ${pwFile}`);
    const set = cli(['fleet', 'password', 'set', 'fleet'], 'pw-from-stdin\n');
    expect(set.status, set.stderr).toBe(0);
    const stored = path.join(board.root, 'cli-home');
    const file = filesUnder(stored).find((f) => f.endsWith('/redis/fleet.secret'))!;
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toBe('pw-from-stdin\n');
  });
});
