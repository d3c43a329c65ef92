/**
 * The inspector's "Replay parameters" form in Debian's Chromium against a real `runboard serve`: a card
 * of a replay flow with a workflow (cards/<card>/schema.json) shows one field per parameter; a new value
 * saved and queued lands in the card's `params:` (an empty field keeps the recorded value) and the card
 * goes to Queued; a name the workflow does not have is refused, saying which. No serious axe-core
 * violation; a screenshot in test-results/.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { seriousViolations } from './helpers/axe.ts';
import { ARTIFACTS, BoardServer, REPO, suiteOnCard, waitUntil, writeCardWorkflow } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

// A replay flow whose provider has no key: a queued card waits for it instead of starting a run.
const CONFIG = `version: 1
scheduler:
  maxConcurrency: 2
flows:
  replay: { runner: replay, provider: openai, prompt: ${JSON.stringify(path.join(REPO, 'prompts', 'replay_agent'))}, cap: 1 }
`;
const SAMPLE = readFileSync(path.join(REPO, 'tests/fixtures/workflows/form-fill/schema.json'), 'utf8');

const front = (): Record<string, unknown> => {
  const text = readFileSync(path.join(suite.server.project, 'cards', 'fill-form.md'), 'utf8');
  return parse(/^---\n([\s\S]*?)\n---/.exec(text)![1]!) as Record<string, unknown>;
};

const suite = suiteOnCard(
  async () => {
    const server = await BoardServer.start(CONFIG, {
      'fill-form.md': '---\ntitle: Fill the form\nflow: replay\n---\n# Task\nFill the form.\n',
    });
    writeCardWorkflow(server, 'fill-form', SAMPLE);
    return server;
  },
  'fill-form',
  'Fill the form',
);

describe('replay parameters in the board', () => {
  it('asks for the workflow’s parameters; saved and queued, the card holds the new value', async () => {
    const form = suite.page.getByRole('region', { name: 'Replay parameters' });
    const name = form.getByRole('textbox', { name: 'full_name' });
    await name.waitFor();
    expect(await name.getAttribute('placeholder')).toBe('Ada Lovelace'); // the recorded value
    await form.getByRole('textbox', { name: 'email' }).waitFor();
    await name.fill('Grace Hopper');
    expect(await seriousViolations(suite.page)).toEqual([]);
    await form.getByRole('button', { name: 'Save and queue' }).click();
    await form.getByText('Saved; the card is queued.').waitFor();
    await savePicture(suite.page, path.join(ARTIFACTS, 'replay-params.png'), { fullPage: true });
    // only the value given; the empty email replays the recorded one
    expect(front().params).toEqual({ full_name: 'Grace Hopper' });
    // Queued: the scheduler took it (the project's folder is not granted here, so it stops on that).
    const card = await waitUntil('the card queued and tried', async () =>
      (await suite.server.board()).cards.find((c) => c.id === 'fill-form' && c.column !== 'backlog'),
    );
    expect(card.column === 'queued' || /no grant covers the workspace/.test(card.lastError ?? '')).toBe(true);
  });

  it('refuses a name the workflow does not have, saying which', async () => {
    await expect(
      suite.server.api('PUT', '/api/cards/fill-form/params', { params: { nobody: 'x' } }),
    ).rejects.toThrow(/"nobody" is not a parameter of the workflow \(it has: full_name, email\)/);
    expect(front().params).toEqual({ full_name: 'Grace Hopper' });
  });
});
