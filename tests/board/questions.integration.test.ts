/**
 * Questions, end to end: a real `claude` run (the Claude Code CLI, through the supervisor's model proxy,
 * against the scripted model server, the one test double) ends NEEDS_CLARIFICATION; the scheduler moves
 * the card to Needs input and appends the run's questions to the card's `## Questions` in its
 * markdown format (one atomic write, the rest of the card kept); the inspector shows them; answering in the
 * inspector writes `- [x] q` + `Answer: a` into the card and re-queues it; the next run reads the answer.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { ARTIFACTS, BoardServer, launchBrowser, REPO, waitUntil } from '../e2e/helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const result = (v: object): string => `RUNBOARD_RESULT: ${JSON.stringify(v)}`;

const CONFIG = `version: 1
scheduler: { maxConcurrency: 2 }
flows:
  ask:
    runner: claude
    provider: anthropic
    model: claude-sonnet-4-5
    prompt: ${path.join(REPO, 'prompts', 'review')}
    worktree: false
    readOnly: true
    cap: 1
    timeout: 2m
`;
const CARD = `---
title: Pick a branch # the person's comment stays
flow: ask
workspace: ./workspace
---
# Task
EPISODE:ask Tell me which branch to fix.

## Questions
- None.

## Notes
Written by a person; must survive.
`;

let model: ModelServer;
let server: BoardServer;
let browser: Browser;

beforeAll(async () => {
  model = await startModelServer();
  model.setEpisodes([
    // the first match wins: the answered card (its body now holds the answer) succeeds
    {
      name: 'answered',
      match: 'Answer: use main',
      turns: [{ text: result({ status: 'SUCCESS', summary: 'fixed on main' }) }],
    },
    {
      name: 'ask',
      match: 'EPISODE:ask',
      turns: [
        {
          text: `I need to know more.\n${result({
            status: 'NEEDS_CLARIFICATION',
            summary: 'two questions',
            questions: [
              'Which branch should the fix go to?',
              // the structured form: choices, one recommended (a free answer stays possible)
              {
                id: 'api',
                question: 'Keep the old API?',
                options: ['no, drop it', 'yes, until 2.0'],
                recommended: 'yes, until 2.0',
                allow_freeform: true,
              },
            ],
          })}`,
        },
      ],
    },
  ]);
  server = await BoardServer.start(CONFIG, { 'ask.md': CARD }, BoardServer.withModel('anthropic', model.url));
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await model?.close();
});

describe('questions from a run', () => {
  it('needs-input: the card moves to Needs input with the questions appended; answering re-queues it', async () => {
    await server.api('POST', '/api/cards/ask/move', { to: 'queued', index: 0 });
    await waitUntil('Needs input', async () => (await server.card('ask'))?.column === 'needs-input', 90_000);
    const text = readFileSync(server.cardFile('ask.md'), 'utf8');
    expect(text).toContain("title: Pick a branch # the person's comment stays");
    expect(text).toMatch(/status: needs-input/);
    expect(text).toContain(
      '## Questions\n- [ ] Which branch should the fix go to?\n- [ ] Keep the old API?\n  Options: no, drop it | yes, until 2.0 (recommended)\n\n## Notes\nWritten by a person; must survive.\n',
    );
    expect(text).not.toContain('- None.');
    expect(readdirSync(path.dirname(server.cardFile('ask.md')))).toEqual(['ask.md']); // no temp file left
    expect((await server.card('ask'))?.openQuestions).toBe(2);

    // the inspector shows them and takes the answers
    const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
    await page.goto(server.url);
    await page.locator('li[data-card-id="ask"]').getByText('2 open questions').waitFor();
    await page.click('li[data-card-id="ask"]');
    const questions = page.getByRole('region', { name: 'Questions' });
    await questions.getByText('Which branch should the fix go to?').waitFor();
    await questions.getByText('Questions (2 open of 2)').waitFor();
    await savePicture(page, path.join(ARTIFACTS, 'inspector-questions.png'));
    await page.getByLabel('Answer to: Which branch should the fix go to?').fill('use main');
    // a choice fills the answer (the recommended one is marked)
    const choices = questions.getByRole('group', { name: 'Choices for: Keep the old API?' });
    await choices.getByRole('button', { name: /yes, until 2\.0 · recommended/ }).click();
    expect(await page.getByLabel('Answer to: Keep the old API?').inputValue()).toBe('yes, until 2.0');
    expect(await choices.getByRole('button', { name: /yes, until 2\.0/ }).getAttribute('aria-pressed')).toBe(
      'true',
    );
    await savePicture(page, path.join(ARTIFACTS, 'inspector-questions-choices.png'));
    await page.getByRole('button', { name: 'Answer & re-queue' }).click();

    // the answers are in the card (seed format) and the re-run, which reads the card, succeeds
    await waitUntil('Done', async () => (await server.card('ask'))?.column === 'done', 90_000);
    const after = readFileSync(server.cardFile('ask.md'), 'utf8');
    expect(after).toContain(
      '## Questions\n- [x] Which branch should the fix go to?\n  Answer: use main\n- [x] Keep the old API?\n  Options: no, drop it | yes, until 2.0 (recommended)\n  Answer: yes, until 2.0\n\n## Notes\n',
    );
    await questions.getByText('Questions (0 open of 2)').waitFor();
    expect((await server.card('ask'))?.openQuestions).toBeUndefined();
    await savePicture(page, path.join(ARTIFACTS, 'inspector-questions-answered.png'));
    const played = model.requests.filter((r) => r.episode).map((r) => r.episode);
    expect(played).toContain('ask');
    expect(played).toContain('answered');
    await page.close();
  });
});
