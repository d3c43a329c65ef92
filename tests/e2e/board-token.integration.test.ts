/**
 * The board's access token in a real browser (Debian's Chromium) against a real `runboard serve`:
 * the attack of issue 28. Cookies are not port-scoped: a cookie the board sets on 127.0.0.1 is sent by
 * the browser to every other server on 127.0.0.1, whatever its port. So the token must not live in a
 * cookie at all; the page holds it and sends it itself (docs/security-model.md, "The board server").
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BoardServer, launchBrowser, shellCard, shellConfig, waitUntil } from './helpers/board.ts';

let server: BoardServer;
let browser: Browser;
let context: BrowserContext;
let board: Page;
const boardPort = (): number => Number(new URL(server.base).port);

/** Another local web server, on another port: what it received from the browser. */
interface Evil {
  port: number;
  requests: { url: string; headers: http.IncomingHttpHeaders }[];
  close(): Promise<void>;
}

async function evilServer(boardPort: number): Promise<Evil> {
  const requests: Evil['requests'] = [];
  // Its page also tries the board from inside the browser (the browser adds what it would send).
  const page = `<!doctype html><title>another local app</title><body><p id="state">…</p><script>
    const b = 'http://127.0.0.1:${boardPort}';
    Promise.allSettled([
      fetch(b + '/api/cards', { method: 'POST', credentials: 'include', mode: 'no-cors',
        headers: { 'content-type': 'text/plain' },
        body: JSON.stringify({ title: 'from the page', flow: 'shell', body: '' , queue: true }) }),
      fetch(b + '/api/board', { credentials: 'include', mode: 'no-cors' }),
    ]).then(() => { document.getElementById('state').textContent = 'done'; });
  </script></body>`;
  const srv = http.createServer((req, res) => {
    requests.push({ url: req.url ?? '', headers: req.headers });
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(page);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    port: (srv.address() as AddressInfo).port,
    requests,
    close: () => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))),
  };
}

/** A request to the board as the other server would make it, with what the browser gave it. */
function replay(method: string, p: string, headers: Record<string, string>, body?: unknown) {
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: boardPort(), path: p, method, headers }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

beforeAll(async () => {
  server = await BoardServer.start(shellConfig(), { 'a.md': shellCard('Card A', 'echo a') });
  browser = await launchBrowser();
  context = await browser.newContext();
  board = await context.newPage();
  await board.goto(server.url);
  await board.waitForSelector('li[data-card-id="a"]');
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('the board token and other local ports', () => {
  it('attack: a page of another local port gets no token from the browser, and cannot create or queue a card', async () => {
    const evil = await evilServer(boardPort());
    try {
      const other = await context.newPage();
      await other.goto(`http://127.0.0.1:${evil.port}/`);
      await other.getByText('done').waitFor();
      // what the browser sent to the other port: never the token, in any header
      const sent = JSON.stringify(evil.requests.map((r) => r.headers));
      expect(sent).not.toContain(server.token);
      // with whatever cookies it got, the other server tries the board as the board's own page would
      const cookie = evil.requests.map((r) => r.headers.cookie ?? '').find(Boolean) ?? '';
      const headers = {
        host: `127.0.0.1:${boardPort()}`,
        'content-type': 'application/json',
        ...(cookie ? { cookie } : {}),
      };
      const created = await replay('POST', '/api/cards', headers, {
        title: 'pwned',
        flow: 'shell',
        workspace: server.workspace,
        command: 'touch pwned',
        body: '',
        queue: true,
      });
      expect(created.status).toBe(401);
      expect((await replay('GET', '/api/board', headers)).status).toBe(401);
      const titles = (await server.board()).cards.map((c) => c.title);
      expect(titles).not.toContain('pwned');
      expect(titles).not.toContain('from the page');
      await other.close();
    } finally {
      await evil.close();
    }
  });

  it('the board keeps working after a reload and through a link to a card (the page holds its token)', async () => {
    await board.reload();
    await board.waitForSelector('li[data-card-id="a"]');
    await board.goto(`${server.base}/#card=a`);
    await board.getByRole('complementary', { name: 'Inspector: Card A' }).waitFor();
    // the event stream carries the token too: a card written meanwhile shows without a reload
    server.writeCard('b.md', shellCard('Card B', 'echo b'));
    await board.waitForSelector('li[data-card-id="b"]');
    // the address bar never holds the token
    expect(board.url()).not.toContain(server.token);
  });

  it('another browser profile on the bare address is told to open the printed URL, and learns nothing', async () => {
    const fresh = await (await browser.newContext()).newPage();
    const res = await fresh.goto(`${server.base}/`);
    expect(await res!.text()).not.toContain('Card A');
    await fresh.getByText('open the URL runboard serve printed').waitFor();
    await waitUntil(
      'no card on the page',
      async () => (await fresh.locator('li[data-card-id]').count()) === 0,
    );
    await fresh.context().close();
  });
});
