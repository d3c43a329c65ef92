/**
 * Provider keys from the board in Debian's Chromium against a real `runboard serve` and its supervisor,
 * with the scripted model server as the provider: the onboarding panel asks for a flow's missing key,
 * the key goes once to the supervisor (which checks it against the provider) and never comes back to
 * the page; Settings → Providers replaces, checks and removes it. Screenshots and axe-core on each view.
 */
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statePaths } from '@runboard/supervisor/paths';
import { readProviderKey } from '../../supervisor/src/common/secrets.ts';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { seriousViolations } from './helpers/axe.ts';
import { ARTIFACTS, BoardServer, launchBrowser, waitUntil } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const KEY = 'sk-board-entered-4f9a1c7e2b';
const AGENT_NEEDS = '"an OpenAI key: write keys/providers/openai.key"';
const CONFIG = `version: 1
flows:
  shell: { runner: command, cap: 2 }
  coder: { runner: codex, provider: openai, cap: 1 }
  nowhere: { runner: codex, provider: offline, cap: 1 }
  ghost: { runner: codex, provider: ghost, cap: 1 }
`;

let model: ModelServer;
let server: BoardServer;
let browser: Browser;
let page: Page;
/** Every body the page received from the board server. */
const received: string[] = [];

beforeAll(async () => {
  model = await startModelServer();
  server = await BoardServer.start(
    CONFIG,
    {
      'hello.md': '---\ntitle: Hello\nflow: shell\nworkspace: ./workspace\ncommand: echo hi\n---\n',
      // a static `needs:` in the card's file, about the key the panel asks for
      'agent.md': `---\ntitle: Agent\nflow: coder\nworkspace: ./workspace\nneeds: ${AGENT_NEEDS}\n---\n`,
    },
    {
      env: {
        RUNBOARD_PROVIDER_OPENAI_URL: model.url,
        // a provider that cannot be reached: its check says so
        RUNBOARD_PROVIDER_OFFLINE_URL: 'http://127.0.0.1:9',
      },
    },
  );
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
  page.on('response', (r) => {
    if (r.url().includes('/api/') && !r.url().includes('/api/events'))
      void r.text().then(
        (t) => received.push(t),
        () => undefined,
      );
  });
  await page.goto(server.url);
  await page.waitForSelector('li[data-card-id="hello"]');
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await model?.close();
});

describe('provider keys from the board', () => {
  it('the onboarding panel asks for a missing key; the supervisor stores and checks it; the page never gets it back', async () => {
    const panel = page.getByRole('region', { name: 'Set up model providers' });
    await panel.getByText(/Flow coder uses/).waitFor();
    const agent = page.locator('li[data-card-id="agent"]');
    await agent.getByText('needs: an OpenAI key: write keys/providers/openai.key').waitFor();
    await panel.getByText(/supervisor knows no provider "ghost"/).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await savePicture(page, path.join(ARTIFACTS, 'keys-onboarding-1440.png'));
    const field = panel.getByLabel('openai key');
    expect(await field.getAttribute('type')).toBe('password');
    await field.focus();
    await page.keyboard.type(KEY);
    await page.keyboard.press('Enter');
    await panel
      .getByRole('status')
      .getByText(/accepted the key/)
      .waitFor();
    // the card's static needs: is shown as met, not as a contradicting "write keys/…"
    await agent.getByText('✓ openai key saved').waitFor();
    expect(await agent.textContent()).not.toContain('needs:');
    await agent.click();
    const inspector = page.getByRole('complementary');
    await inspector.getByText(/Needs met: openai key saved/).waitFor();
    expect(await inspector.textContent()).not.toContain('write keys/providers');
    expect(await inspector.getByText(/^Needs:/).count()).toBe(0);
    await savePicture(page, path.join(ARTIFACTS, 'keys-needs-met-1440.png'));
    await page.keyboard.press('Escape');
    // the supervisor holds it, and asked the provider with it
    expect(readProviderKey(statePaths({ RUNBOARD_HOME: server.home }), 'openai')).toBe(KEY);
    const asked = model.requests.find((r) => r.api === 'models');
    expect(asked?.headers.authorization).toBe(`Bearer ${KEY}`);
    // the field is empty again; nothing the page received holds the key
    expect(await field.inputValue()).toBe('');
    await page.getByRole('button', { name: 'Settings' }).click();
    await page.getByRole('dialog', { name: 'Settings' }).getByText('key saved').waitFor();
    expect(received.length).toBeGreaterThan(3);
    expect(received.filter((t) => t.includes(KEY))).toEqual([]);
    expect(await page.content()).not.toContain(KEY);
  });

  it('Settings → Providers: check, remove and set the key again; an unreachable provider is said so', async () => {
    const settings = page.getByRole('dialog', { name: 'Settings' });
    const openai = settings.getByRole('listitem').filter({ has: page.getByText('openai', { exact: true }) });
    await openai.getByRole('button', { name: 'Check key' }).click();
    await openai.getByText(/accepted the key/).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await savePicture(page, path.join(ARTIFACTS, 'keys-settings-1440.png'));
    await openai.getByRole('button', { name: 'Remove key' }).click();
    await openai.getByText('no key', { exact: true }).waitFor();
    expect(readProviderKey(statePaths({ RUNBOARD_HOME: server.home }), 'openai')).toBeNull();
    // with no key the board asks again
    await page.getByRole('region', { name: 'Set up model providers' }).getByLabel('openai key').waitFor();
    await openai.getByRole('button', { name: 'Set key' }).click();
    await openai.getByLabel('openai key').fill(KEY);
    await openai.getByRole('button', { name: 'Save and check' }).click();
    await openai.getByText('key saved').waitFor();
    // a provider that does not answer: the check says it cannot be reached
    const stored = await server.api<{ hasKey: boolean }>('PUT', '/api/providers/offline/key', {
      key: 'sk-x',
    });
    expect(stored.hasKey).toBe(true);
    const check = await server.api<{ ok: boolean; message: string }>('POST', '/api/providers/offline/check');
    expect(check.ok).toBe(false);
    expect(check.message).toMatch(
      /^saved; could not check: are you offline\? \(cannot reach http:\/\/127\.0\.0\.1:9/,
    );
    // a name no supervisor knows is refused, saying which it knows
    await expect(server.api('PUT', '/api/providers/nosuch/key', { key: 'sk-x' })).rejects.toThrow(
      /400 the supervisor knows no provider "nosuch"/,
    );
    await page.keyboard.press('Escape');
    await waitUntil('settings closed', async () => (await settings.count()) === 0);
  });
});
