/**
 * Settings → Configuration in Debian's Chromium against a real `runboard serve`: the effective config
 * with where each value came from (built-in default, the user config, config.yaml, the profile a flow
 * selects) and the config's warnings (an old key name, an unknown key, a placeholder in a profile, a
 * user config that needs upgrading) in the board, not only on the CLI. Reached by keyboard; axe-core;
 * a screenshot into test-results/.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriousViolations } from './helpers/axe.ts';
import { ARTIFACTS, BoardServer, launchBrowser, shellCard } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

let server: BoardServer;
let browser: Browser;
let page: Page;

const PROFILES =
  'llm_profiles:\n  fast: { provider: openai, model: gpt-fast }\nvision_profiles:\n  eyes: { provider: zhipu, model: "<your vision model>" }\n';

beforeAll(async () => {
  server = await BoardServer.start(
    'version: 2\nscheduler:\n  maxConcurrency: 3\nflows:\n  shell: { runner: command, cap: 2, profile: fast, vision_profile: eyes, colour: blue }\n',
    { 'job.md': shellCard('A job', 'echo one') },
    {
      beforeServe: (paths) => writeFileSync(path.join(paths.root, 'config.yaml'), `version: 2\n${PROFILES}`),
    },
  );
  // The user config as an older Runboard wrote it (after the board opened, which upgrades what it finds).
  writeFileSync(path.join(server.home, 'config.yaml'), `version: 1\n${PROFILES}`);
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
  await page.goto(server.url);
  await page.waitForSelector('li[data-card-id="job"]');
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** Tabs from where the focus is until `done` says it is there (at most `max` presses). */
async function tabTo(done: () => Promise<boolean>, max = 60): Promise<number> {
  for (let i = 1; i <= max; i++) {
    await page.keyboard.press('Tab');
    if (await done()) return i;
  }
  throw new Error(`not reached with ${max} Tab presses`);
}

describe('Settings → Configuration', () => {
  it('shows each effective value with its origin and the config warnings, reached by keyboard', async () => {
    // the board says there are warnings before anyone opens Settings
    await page.getByRole('status').filter({ hasText: 'The config has 4 warnings' }).waitFor();
    await savePicture(page, path.join(ARTIFACTS, 'board-config-warnings-1440.png'));
    await tabTo(() =>
      page.getByRole('button', { name: 'Settings' }).evaluate((b) => b === document.activeElement),
    );
    await page.keyboard.press('Enter');
    const settings = page.getByRole('dialog', { name: 'Settings' });
    const section = settings.getByRole('region', { name: 'Effective configuration values' });
    await section.waitFor();

    const warnings = settings.getByRole('group', { name: /config warnings?/ });
    const texts = await warnings.getByRole('listitem').allTextContents();
    const user = path.join(server.home, 'config.yaml');
    const project = path.join(server.project, 'config.yaml');
    expect(texts).toEqual(
      expect.arrayContaining([
        `${user}: version 1 is older than this Runboard's (2); it was read as version 2 (\`runboard config --upgrade\` writes that into the file, keeping your comments)`,
        `${project}: flows.shell.vision_profile is an old name: write visionProfile (read as that for now)`,
        expect.stringContaining(`${project}: flows.shell.colour is not a key this Runboard knows`),
        expect.stringContaining(
          `${user}: vision_profiles.eyes.model is still a placeholder ("<your vision model>")`,
        ),
      ]),
    );
    expect(texts).toHaveLength(4);

    const origin = async (key: string): Promise<[string, string]> => {
      const row = section.locator('tr', {
        has: page.locator('td:first-child', { hasText: new RegExp(`^${key.replace(/\./g, '\\.')}$`) }),
      });
      const cells = await row.locator('td').allTextContents();
      return [cells[1]!, cells[2]!];
    };
    expect(await origin('scheduler.maxConcurrency')).toEqual(['3', 'config.yaml']);
    expect(await origin('scheduler.backoff.base')).toEqual(['2000', 'built-in default']);
    expect(await origin('llm_profiles.fast.model')).toEqual(['gpt-fast', 'user config']);
    expect(await origin('flows.shell.cap')).toEqual(['2', 'config.yaml']);
    expect(await origin('flows.shell.visionProfile')).toEqual(['eyes', 'config.yaml']);
    // what the flow's profile gives it
    expect(await origin('flows.shell.provider')).toEqual(['openai', 'profile fast (user config)']);
    expect(await origin('flows.shell.model')).toEqual(['gpt-fast', 'profile fast (user config)']);

    // Providers counts the flow as openai's, through its profile
    const providers = settings.getByRole('region', { name: 'Providers' });
    await expect
      .poll(() => providers.locator('li', { hasText: 'openai' }).first().textContent())
      .toContain('flows: shell');

    // the table is reachable by keyboard (a scrolling region takes the focus), and the filter too
    await tabTo(() => section.evaluate((el) => el === document.activeElement));
    await page.keyboard.press('Shift+Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('config-filter');
    await page.keyboard.type('backoff');
    const keys = await section.locator('tbody td:first-child').allTextContents();
    expect(keys).toEqual(['scheduler.backoff.base', 'scheduler.backoff.max', 'scheduler.backoff.retries']);
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');

    expect(await seriousViolations(page)).toEqual([]);
    await section.scrollIntoViewIfNeeded();
    await savePicture(page, path.join(ARTIFACTS, 'settings-config-1440.png'));
    await page.keyboard.press('Escape');
    await settings.waitFor({ state: 'detached' });
  });
});
