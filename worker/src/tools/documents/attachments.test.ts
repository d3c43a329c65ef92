import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentsJson, cardAttachments } from './attachments.ts';

let root: string;
let ws: string;
beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'rb-attach-'));
  ws = path.join(root, 'ws');
  mkdirSync(path.join(ws, 'data'), { recursive: true });
  writeFileSync(path.join(ws, 'data', 'book.xlsx'), 'x'.repeat(10));
  writeFileSync(path.join(ws, 'report.pdf'), 'secret content of the report');
  writeFileSync(path.join(root, 'outside.md'), 'outside');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const card = (body: string): string => `---\ntitle: t\nflow: research\n---\n${body}\n`;

describe('a card’s @path references', () => {
  it('become metadata only (path, name, type, size, sheet), each once, in order', () => {
    const list = cardAttachments(
      card('Summarise @report.pdf and @data/book.xlsx#Sheet2, then @report.pdf again.'),
      { workspace: ws, allow: [] },
    );
    expect(list).toEqual([
      { path: 'report.pdf', name: 'report.pdf', type: 'pdf', bytes: 28 },
      { path: 'data/book.xlsx', name: 'book.xlsx', type: 'xlsx', sheet: 'Sheet2', bytes: 10 },
    ]);
    // The prompt gets this JSON: the references, never the files' content.
    const json = attachmentsJson(list);
    expect(JSON.parse(json)).toEqual(list);
    expect(json).not.toContain('secret content');
  });

  it('ignores e-mail addresses, @mentions and the front matter; an empty list is []', () => {
    const text = '---\ntitle: t\nowner: "@me.md"\n---\nMail ada@example.com, ask @grace, or @@template.\n';
    expect(cardAttachments(text, { workspace: ws, allow: [] })).toEqual([]);
    expect(attachmentsJson([])).toBe('[]');
  });

  it('lists a missing file and a path outside the workspace with the reason, without looking at it', () => {
    const list = cardAttachments(card('Read @missing.docx and @../outside.md'), { workspace: ws, allow: [] });
    expect(list[0]).toEqual({
      path: 'missing.docx',
      name: 'missing.docx',
      type: 'docx',
      error: 'no such file in the workspace',
    });
    expect(list[1]).toMatchObject({ path: '../outside.md', type: 'md' });
    expect(list[1]!.bytes).toBeUndefined();
    expect(list[1]!.error).toMatch(
      /^\.\.\/outside\.md is outside the workspace; to allow it, grant its folder/,
    );
    // A folder the flow may use (its granted writable trees) counts as inside.
    const allowed = cardAttachments(card(`Read @${path.join(root, 'outside.md')}`), {
      workspace: ws,
      allow: [root],
    });
    expect(allowed[0]).toMatchObject({ path: path.join(root, 'outside.md'), bytes: 7 });
  });
});
