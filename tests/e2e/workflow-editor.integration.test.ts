/**
 * The inspector's "Edit workflow" in Debian's Chromium against a real `runboard serve`: a card with a
 * workflow (cards/<card>/schema.json); rename a parameter (its templates follow), change an example,
 * an invalid edit shown with where it is and never saved, a dependency moved below its extract refused,
 * a subtask and a step added and removed, a step's locator removed, restored and edited (an invalid one
 * refused), an outcome check added, the review, then Save: the file holds exactly the edits, in
 * the stable form. No serious axe-core violation; screenshots in test-results/.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serializeWorkflow, type Workflow } from '@runboard/supervisor/protocol';
import { seriousViolations } from './helpers/axe.ts';
import { ARTIFACTS, BoardServer, launchBrowser, openCard, REPO, writeCardWorkflow } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const CONFIG = `version: 1
scheduler:
  maxConcurrency: 2
flows:
  replay: { runner: command, cap: 1 }
`;
const SAMPLE = readFileSync(path.join(REPO, 'tests/fixtures/workflows/form-fill/schema.json'), 'utf8');

let server: BoardServer;
let browser: Browser;
let page: Page;
let file: string;
let otherFile: string;

const status = (p: Page): Locator => p.locator('.workflow-editor [role="status"]');

beforeAll(async () => {
  server = await BoardServer.start(CONFIG, {
    'fill-form.md': '---\ntitle: Fill the form\nflow: replay\ncommand: "true"\n---\n# Task\nFill the form.\n',
    'other-form.md': '---\ntitle: Other form\nflow: replay\ncommand: "true"\n---\n# Task\nFill it again.\n',
  });
  file = writeCardWorkflow(server, 'fill-form', SAMPLE);
  otherFile = writeCardWorkflow(server, 'other-form', SAMPLE);
  browser = await launchBrowser();
  page = await openCard(server, browser, 'fill-form', 'Fill the form');
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('the workflow editor', () => {
  it('shows the workflow on the card and opens the editor', async () => {
    const section = page.getByRole('region', { name: 'Workflow' });
    await section
      .getByText('cards/fill-form/schema.json: 3 subtasks, 8 steps, parameters: full_name, email')
      .waitFor();
    await section.getByRole('button', { name: 'Edit workflow' }).click();
    await status(page).getByText('The workflow is valid.').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('renames a parameter with its templates, and edits an example', async () => {
    const name = page.getByRole('textbox', { name: 'Parameter 1 name' });
    await name.fill('person_name');
    await name.blur();
    await page.getByRole('textbox', { name: 'Parameter 2 example' }).fill('grace@example.org');
    await page.getByRole('tab', { name: /Subtasks/ }).click();
    await expect
      .poll(() => page.getByRole('textbox', { name: 'Subtask 1 text' }).inputValue())
      .toBe('Enter {person_name} as the name and {email} as the email in the form');
    expect(await page.getByRole('textbox', { name: 'Subtask 1 step 2 action value' }).inputValue()).toBe(
      '{person_name}',
    );
    await status(page).getByText('The workflow is valid.').waitFor();
  });

  it('shows an invalid edit with where it is, and does not save it', async () => {
    const text = page.getByRole('textbox', { name: 'Subtask 1 text' });
    await text.fill('Enter {nobody} as the name');
    await status(page).getByText('plan.subtasks[0].text').waitFor();
    await expect.poll(() => status(page).textContent()).toContain('{nobody} is neither a parameter');
    expect(await page.getByRole('button', { name: 'Save workflow' }).isDisabled()).toBe(true);
    await savePicture(page, path.join(ARTIFACTS, 'workflow-editor-invalid.png'), { fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);
    // The host refuses it too, whole: the file is as it was.
    const wf = (await server.api<{ workflow: unknown }>('GET', '/api/cards/fill-form/workflow')).workflow as {
      plan: { subtasks: { text: string }[] };
    };
    wf.plan.subtasks[0]!.text = 'Enter {nobody}';
    const r = await server.api<{ saved: boolean; problems: { path: string }[] }>(
      'PUT',
      '/api/cards/fill-form/workflow',
      { workflow: wf, base: SAMPLE },
    );
    expect(r.saved).toBe(false);
    expect(r.problems.map((p) => p.path)).toEqual(['plan.subtasks[0].text']);
    expect(readFileSync(file, 'utf8')).toBe(SAMPLE);
    await text.fill('Enter {person_name} as the name and {email} as the email in the form');
    await status(page).getByText('The workflow is valid.').waitFor();
  });

  it('refuses a dependency on an extract that would come later', async () => {
    const deps = page.getByRole('group', { name: 'Subtask 3 dependencies' });
    expect(await deps.getByRole('checkbox', { name: 'status_text' }).isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Move subtask 3 up' }).click();
    await expect
      .poll(() => status(page).textContent())
      .toContain('"status_text" is extracted by subtask 2, which runs after this one');
    await page.getByRole('button', { name: 'Move subtask 2 down' }).click();
    await status(page).getByText('The workflow is valid.').waitFor();
  });

  it('adds and removes subtasks and steps', async () => {
    await page.getByRole('button', { name: 'Add subtask' }).click();
    await page.getByRole('button', { name: 'Add a step to subtask 4' }).click();
    await page.getByRole('combobox', { name: 'Subtask 4 step 1 action type' }).selectOption('KEYPRESS');
    await expect.poll(() => status(page).textContent()).toContain('a KEYPRESS step needs the key to press');
    await page.getByRole('textbox', { name: 'Subtask 4 step 1 action value' }).fill('Enter');
    await status(page).getByText('The workflow is valid.').waitFor();
    await page.getByRole('button', { name: 'Delete subtask 4', exact: true }).click();
    await page.getByRole('button', { name: 'Move subtask 1 step 4 up' }).click();
    await page.getByRole('button', { name: 'Move subtask 1 step 3 down' }).click();
    await status(page).getByText('The workflow is valid.').waitFor();
  });

  it('shows, edits, removes and restores a step’s locator, and edits an outcome check, with validation', async () => {
    const step = (k: number, i: number) => `Subtask ${k} step ${i}`;
    // Removed: the step goes to the model; added back from the recording: as it was.
    await page.getByText('Locator: text “Name” in Runboard Recorder Form').click();
    await page.getByRole('button', { name: `Remove locator of ${step(1, 1).toLowerCase()}` }).click();
    await page.getByText('No locator: replay asks the model for this step.').first().waitFor();
    await page
      .getByRole('button', { name: `Add the recorded locator to ${step(1, 1).toLowerCase()}` })
      .click();
    await page.getByText('Locator: text “Name” in Runboard Recorder Form').click();
    expect(await page.getByRole('textbox', { name: `${step(1, 1)} path 2 name` }).inputValue()).toBe('Name');
    // The app renamed Submit: the element's name, and the path's end with it.
    await page.getByText('Locator: push button “Submit”').click();
    await page.getByRole('textbox', { name: `${step(2, 1)} locator name` }).fill('Send');
    expect(await page.getByRole('textbox', { name: `${step(2, 1)} path 2 name` }).inputValue()).toBe('Send');
    // An invalid locator is shown where it is, and blocks the save.
    await page.getByRole('textbox', { name: `${step(2, 1)} locator role` }).fill('');
    await expect.poll(() => status(page).textContent()).toContain("a locator needs the element's role");
    await status(page).getByText('plan.subtasks[1].steps[0].locator.role').waitFor();
    expect(await page.getByRole('button', { name: 'Save workflow' }).isDisabled()).toBe(true);
    await page.getByRole('textbox', { name: `${step(2, 1)} locator role` }).fill('push button');
    await page.getByRole('button', { name: `Remove ${step(2, 1).toLowerCase()} path 1` }).click();
    await status(page).getByText('The workflow is valid.').waitFor();
    // An outcome check: empty is refused; a template must be a parameter.
    await page.getByRole('button', { name: 'Add outcome check to subtask 1' }).click();
    await expect
      .poll(() => status(page).textContent())
      .toContain('an outcome check needs a role, a name or a value');
    await page.getByRole('textbox', { name: 'Subtask 1 outcome check value' }).fill('{nobody}');
    await expect.poll(() => status(page).textContent()).toContain('{nobody} is neither a parameter');
    await page.getByRole('textbox', { name: 'Subtask 1 outcome check value' }).fill('{person_name}');
    await page.getByRole('textbox', { name: 'Subtask 1 outcome check name' }).fill('Name');
    await status(page).getByText('The workflow is valid.').waitFor();
    await savePicture(page, path.join(ARTIFACTS, 'workflow-editor-locator.png'), { fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('reviews the whole plan, then saves exactly the edits in the stable form', async () => {
    await page.getByRole('tab', { name: 'Review' }).click();
    await page.getByText('uses status_text').waitFor();
    await page.getByText('checks “Name” showing “{person_name}”').waitFor();
    await page.getByText('3 without a locator (the model does them)').waitFor();
    await savePicture(page, path.join(ARTIFACTS, 'workflow-editor-review.png'), { fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('tab', { name: /Parameters/ }).click();
    await savePicture(page, path.join(ARTIFACTS, 'workflow-editor-params.png'), { fullPage: true });
    await page.getByRole('button', { name: 'Save workflow' }).click();
    await page
      .getByRole('region', { name: 'Workflow' })
      .getByText('parameters: person_name, email')
      .waitFor();
    const expected = SAMPLE.replaceAll('{full_name}', '{person_name}')
      .replace('"name": "full_name"', '"name": "person_name"')
      .replace('"example": "ada@example.org"', '"example": "grace@example.org"');
    const w = JSON.parse(expected) as Workflow;
    w.plan.subtasks[0]!.outcome_check = { name: 'Name', value: '{person_name}' };
    const submit = w.plan.subtasks[1]!.steps[0]!.locator!;
    submit.name = 'Send';
    submit.path = [{ role: 'push button', name: 'Send', index: 0 }];
    expect(readFileSync(file, 'utf8')).toBe(serializeWorkflow(w));
  });

  it('unsaved edits stay with their card: another card never shows them, and coming back finds them', async () => {
    const saved = readFileSync(file, 'utf8');
    await page
      .getByRole('region', { name: 'Workflow' })
      .getByRole('button', { name: 'Edit workflow' })
      .click();
    const name = page.getByRole('textbox', { name: 'Parameter 1 name' });
    await name.fill('someone');
    await name.blur();
    await page.getByRole('tab', { name: 'Parameters (2)' }).waitFor();
    await page.click('li[data-card-id="other-form"]');
    await page.getByRole('complementary', { name: 'Inspector: Other form' }).waitFor();
    // the other card's own workflow, and no editor holding the first card's edits
    await page
      .getByRole('region', { name: 'Workflow' })
      .getByText('cards/other-form/schema.json: 3 subtasks, 8 steps, parameters: full_name, email')
      .waitFor();
    expect(await page.locator('.workflow-editor').count()).toBe(0);
    await page.click('li[data-card-id="fill-form"]');
    await page.getByRole('complementary', { name: 'Inspector: Fill the form' }).waitFor();
    await expect
      .poll(() => page.getByRole('textbox', { name: 'Parameter 1 name' }).inputValue())
      .toBe('someone');
    await page.locator('.workflow-editor').getByRole('button', { name: 'Cancel' }).click();
    await page
      .getByRole('region', { name: 'Workflow' })
      .getByText('parameters: person_name, email')
      .waitFor();
    expect(readFileSync(file, 'utf8')).toBe(saved);
    expect(readFileSync(otherFile, 'utf8')).toBe(SAMPLE);
  });
});
