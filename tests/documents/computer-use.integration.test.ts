// The document tools in the computer-use loop: a real run (supervisor, jail, worker, the OpenAI and
// Anthropic SDKs against the scripted model server) reads a DOCX of its workspace with read_document
// and types the customer's name it found there into the GTK form; the form's own state proves it. The
// card's `@customer.docx` reaches the prompt as metadata only. A path outside the workspace stops the
// run and asks the person instead.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { toolOutputs, type TurnFn } from '../fixtures/model-server/server.ts';
import { act, CuHarness, cuEvents, find, final, imagePoint } from '../cu/cu-harness.ts';
import { docx } from './fixtures.ts';

let t: CuHarness;
beforeAll(async () => {
  t = await CuHarness.start();
  await docx(path.join(t.h.workspace, 'customer.docx'));
}, 60_000);
afterEach(async () => {
  await t.closeForms();
});
afterAll(async () => {
  await t?.stop();
});

/** The names of the tools a request offered (Responses and Chat function tools, Anthropic tools). */
function offered(body: Record<string, unknown>): string[] {
  return ((body.tools ?? []) as { name?: string; function?: { name: string } }[]).map(
    (x) => x.name ?? x.function?.name ?? '',
  );
}

describe('computer-use with the document tools', () => {
  it('reads a DOCX and types the customer it names into the GTK form', async () => {
    const title = 'CU Docx Form';
    await t.startForm(title);
    const name = await find(title, (e) => e.role === 'text' && e.name === 'Name');
    let tools: string[] = [];
    /** The customer's name as read_document gave it to the model (bold in the DOCX). */
    const customer = (api: Parameters<TurnFn>[0]['api'], body: Record<string, unknown>): string => {
      const out = JSON.parse(toolOutputs(api, body)[0]!) as { ok: boolean; text: string };
      return /Customer: \*\*(.+?)\*\*/.exec(out.text)?.[1] ?? 'NOT FOUND';
    };
    t.episodes([
      {
        name: 'cu-docx',
        match: 'CU-DOCX-MARKER',
        turns: [
          ({ body }) => {
            tools = offered(body);
            return { toolCalls: [{ name: 'read_document', arguments: { path: 'customer.docx' } }] };
          },
          act({ action: 'left_click', ...imagePoint(name.bounds, 0.5) }),
          ({ api, body }) => act({ action: 'type', text: customer(api, body) }),
          final({ status: 'SUCCESS', summary: 'typed the customer', error: '', questions: [] }),
        ],
      },
    ]);
    const rec = await t.run(
      t.card('Customer', 'CU-DOCX-MARKER Type the customer named in @customer.docx into the Name field.'),
      t.flow(),
    );
    expect(rec.result.status, rec.result.summary).toBe('succeeded');
    // The prompt listed the @reference as metadata; its content came only through read_document.
    const first = JSON.stringify(t.model.requests.find((r) => r.episode === 'cu-docx')!.body);
    expect(first).toContain(
      '{\\"path\\":\\"customer.docx\\",\\"name\\":\\"customer.docx\\",\\"type\\":\\"docx\\"',
    );
    expect(first).not.toContain('Lovelace');
    expect(tools).toEqual(expect.arrayContaining(['desktop_action', 'read_document', 'export_document']));
    expect((await find(title, (e) => e.name === 'Name' && e.role === 'text')).value).toBe('Ada Lovelace');
    const steps = cuEvents(rec, 'cu-step');
    expect(steps[0]).toMatchObject({ tool: 'read_document', action: 'read_document' });
    expect(JSON.stringify(steps[0]!.result)).toContain('| City | London |');
  });

  it('a read-only flow offers read_document only; documents: false offers none (Anthropic tools)', async () => {
    const seen: string[][] = [];
    t.episodes([
      {
        name: 'cu-docs-offer',
        match: 'CU-OFFER-MARKER',
        turns: [
          ({ body }) => {
            seen.push(offered(body));
            return final({ status: 'SUCCESS', summary: 'looked', error: '', questions: [] });
          },
        ],
      },
    ]);
    const card = t.card('Offer', 'CU-OFFER-MARKER look at the tools');
    const anthropic = { provider: 'anthropic', model: 'claude-sonnet-4-5' };
    for (const over of [{ readOnly: true }, { documents: false }]) {
      const rec = await t.run(card, t.flow({ ...anthropic, ...over }, { api: 'messages' }));
      expect(rec.result.status, rec.result.summary).toBe('succeeded');
    }
    expect(seen[0]).toEqual(['computer', 'desktop_read', 'terminal_exec', 'read_document']);
    expect(seen[1]).toEqual(['computer', 'desktop_read', 'terminal_exec']);
  });

  it('a path outside the workspace stops the run and asks; nothing is read', async () => {
    const beside = path.join(t.h.root, 'beside-cu');
    mkdirSync(beside, { recursive: true });
    const secret = path.join(beside, 'private.md');
    writeFileSync(secret, 'secret-beside-the-cu-workspace\n');
    t.episodes([
      {
        name: 'cu-docs-outside',
        match: 'CU-OUTSIDE-MARKER',
        turns: [
          { toolCalls: [{ name: 'read_document', arguments: { path: secret } }] },
          final({ status: 'SUCCESS', summary: 'read it', error: '', questions: [] }),
        ],
      },
    ]);
    const rec = await t.run(t.card('Outside', 'CU-OUTSIDE-MARKER read the private file'), t.flow());
    expect(rec.result.status, rec.result.summary).toBe('needs-input');
    expect(JSON.stringify(rec.result.questions)).toContain(
      `read_document: ${secret} is outside the workspace; to allow it, grant its folder`,
    );
    // One request only: the model never got a result, let alone the file.
    const reqs = t.model.requests.filter((r) => r.episode === 'cu-docs-outside');
    expect(reqs).toHaveLength(1);
    expect(JSON.stringify(reqs)).not.toContain('secret-beside-the-cu-workspace');
  });
});
