/**
 * Permission asks, end to end over the board's API with the real parts (serve, its supervisor, the jail):
 * a command run that writes outside its grant is refused by the sandbox; the card asks (Needs input,
 * with the supervisor's record of what was refused); allow once re-runs it with exactly that folder
 * writable and nothing else, config.yaml untouched; deny fails it with the reason; allow always writes
 * the folder into the flow's sandbox.writable (and grants it), so a later run needs no ask. A request
 * naming an ask that is not on record, or another card's run, changes nothing.
 */
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { listGrants } from '@runboard/supervisor/grants';
import { statePaths } from '@runboard/supervisor/paths';
import type { CardDetail } from '../../host/src/shared/board-types.ts';
import { BoardServer, shellConfig, waitUntil } from '../e2e/helpers/board.ts';

let server: BoardServer;
let dirs: Record<'once' | 'other' | 'deny' | 'always' | 'data', string>;

/** A card queued from its file, as an editor or a script would queue it. */
const card = (id: string, command: string): string =>
  `---\nid: ${id}\ntitle: ${id}\nstatus: queued\nflow: shell\nworkspace: ./workspace\ncommand: ${JSON.stringify(command)}\n---\n# Task\n`;

beforeAll(async () => {
  server = await BoardServer.start(shellConfig(), {});
  const at = (n: string): string => {
    const d = path.join(server.root, n);
    mkdirSync(d);
    return realpathSync(d);
  };
  dirs = {
    once: at('out-once'),
    other: at('out-other'),
    deny: at('out-deny'),
    always: at('out-always'),
    data: at('data'),
  };
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

const detail = (id: string): Promise<CardDetail> => server.api<CardDetail>('GET', `/api/cards/${id}`);
const columnOf = async (id: string): Promise<string | undefined> => (await server.card(id))?.column;
const waitColumn = (id: string, col: string, ms = 30_000): Promise<string> =>
  waitUntil(`card ${id} in ${col}`, async () => ((await columnOf(id)) === col ? col : undefined), ms);
const answer = (id: string, runId: string, ask: string, choice: string) =>
  server.api<{ state: string }>('POST', `/api/cards/${id}/asks`, { runId, ask, choice });

describe('permission asks', () => {
  it('a write outside the grant asks; allow once re-runs with only that folder, config untouched', async () => {
    const config = readFileSync(path.join(server.project, 'config.yaml'), 'utf8');
    // the second write's refusal is silenced: it is never asked, and must stay refused on the re-run
    server.writeCard(
      'once.md',
      card(
        'once',
        `echo hi >> ${dirs.once}/a.txt; s=$?; { echo x > ${dirs.other}/b.txt; } 2>/dev/null; exit $s`,
      ),
    );
    await server.confirmCard('once'); // written outside the board as queued: the person confirms it
    await waitColumn('once', 'needs-input');
    const d = await detail('once');
    expect(d.asks?.open).toEqual([
      expect.objectContaining({ id: 'a1', kind: 'write', path: dirs.once, source: 'sandbox' }),
    ]);
    // The folder is outside the run's reads too (the allow-list hides it: "Directory nonexistent").
    expect(d.asks?.open[0]?.evidence).toMatch(
      /cannot create .*(Permission denied|Read-only file system|Directory nonexistent)/,
    );
    const runId = d.asks!.runId;
    expect(existsSync(path.join(dirs.once, 'a.txt'))).toBe(false);
    // the card (and its file) says what it waits for
    expect(d.card.needs).toBe(`your permission to write in ${dirs.once}`);
    expect(readFileSync(server.cardFile('once.md'), 'utf8')).toContain('needs: your permission to write in');

    // attack: an ask that is not on record is refused; nothing moves
    await expect(answer('once', runId, 'a7', 'once')).rejects.toThrow(/asked nothing as a7/);
    expect(await columnOf('once')).toBe('needs-input');

    expect((await answer('once', runId, 'a1', 'once')).state).toBe('queued');
    await waitColumn('once', 'done');
    expect(readFileSync(path.join(dirs.once, 'a.txt'), 'utf8')).toBe('hi\n');
    expect(existsSync(path.join(dirs.other, 'b.txt'))).toBe(false); // only what was asked
    const rerun = (await detail('once')).runs[0]!;
    expect(rerun.runId).not.toBe(runId);
    expect(rerun.allowed).toEqual([expect.objectContaining({ kind: 'write', path: dirs.once })]);
    expect((await server.card('once'))?.needs).toBeUndefined();
    expect(readFileSync(path.join(server.project, 'config.yaml'), 'utf8')).toBe(config);

    // once is once: the next run of the card is refused again and asks again
    await server.api('POST', '/api/cards/once/requeue', { id: 'once' });
    await waitColumn('once', 'needs-input');
    expect((await detail('once')).asks?.open[0]?.path).toBe(dirs.once);
  }, 90_000);

  it("deny fails the card with the reason; another card's run cannot be answered from this card", async () => {
    server.writeCard('deny.md', card('deny', `echo no > ${dirs.deny}/c.txt`));
    await server.confirmCard('deny');
    await waitColumn('deny', 'needs-input');
    const { asks } = await detail('deny');
    const other = (await detail('once')).asks!.runId;
    await expect(answer('deny', other, 'a1', 'always')).rejects.toThrow(/does not wait for an answer to run/);

    expect((await answer('deny', asks!.runId, 'a1', 'deny')).state).toBe('failed');
    await waitColumn('deny', 'failed');
    const c = await server.card('deny');
    expect(c?.lastError).toContain(`you denied the run: write in ${dirs.deny}`);
    expect(existsSync(path.join(dirs.deny, 'c.txt'))).toBe(false);
  }, 90_000);

  it('allow always writes the folder into the flow (and a grant); a later run needs no ask', async () => {
    server.writeCard('always.md', card('always', `echo 1 > ${dirs.always}/d.txt`));
    await server.confirmCard('always');
    await waitColumn('always', 'needs-input');
    const { asks } = await detail('always');
    expect((await answer('always', asks!.runId, 'a1', 'always')).state).toBe('queued');
    await waitColumn('always', 'done');
    const cfg = YAML.parse(readFileSync(path.join(server.project, 'config.yaml'), 'utf8')) as {
      flows: { shell: { sandbox?: { writable?: string[] } } };
    };
    expect(cfg.flows.shell.sandbox?.writable).toEqual([dirs.always]);
    expect(listGrants(statePaths({ RUNBOARD_HOME: server.home })).map((g) => g.path)).toContain(dirs.always);

    server.writeCard('later.md', card('later', `echo 2 > ${dirs.always}/e.txt`));
    await server.confirmCard('later');
    await waitColumn('later', 'done');
    expect(readFileSync(path.join(dirs.always, 'e.txt'), 'utf8')).toBe('2\n');
  }, 90_000);

  it('a refused read asks `read <folder>`; allow always adds it to sandbox.read (no grant), never writable', async () => {
    writeFileSync(path.join(dirs.data, 'in.txt'), 'data\n');
    server.writeCard('reader.md', card('reader', `cat ${dirs.data}/in.txt`));
    await server.confirmCard('reader');
    await waitColumn('reader', 'needs-input');
    const { asks, card: c } = await detail('reader');
    expect(asks?.open).toEqual([expect.objectContaining({ id: 'a1', kind: 'read', path: dirs.data })]);
    expect(c.needs).toBe(`your permission to read ${dirs.data}`);
    expect((await answer('reader', asks!.runId, 'a1', 'always')).state).toBe('queued');
    await waitColumn('reader', 'done');
    const cfg = YAML.parse(readFileSync(path.join(server.project, 'config.yaml'), 'utf8')) as {
      flows: { shell: { sandbox?: { read?: string[]; writable?: string[] } } };
    };
    expect(cfg.flows.shell.sandbox?.read).toEqual([dirs.data]);
    expect(cfg.flows.shell.sandbox?.writable).not.toContain(dirs.data);
    expect(listGrants(statePaths({ RUNBOARD_HOME: server.home })).map((g) => g.path)).not.toContain(
      dirs.data,
    );
    // read only: a write there still asks
    server.writeCard('scribble.md', card('scribble', `echo x > ${dirs.data}/in.txt`));
    await server.confirmCard('scribble');
    await waitColumn('scribble', 'needs-input');
    expect((await detail('scribble')).asks?.open).toEqual([
      expect.objectContaining({ kind: 'write', path: dirs.data }),
    ]);
    expect(readFileSync(path.join(dirs.data, 'in.txt'), 'utf8')).toBe('data\n');
  }, 90_000);
});
