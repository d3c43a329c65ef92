import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadContext, saveContext, signatureOf } from './context.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'runboard-context-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('read context', () => {
  it("gives the short role of the addon's signatures, and takes the old form as it is", () => {
    // what a read leaves since session 18 (element_json.h): platform role, editable, title, bounds
    saveContext(
      {
        windowId: 7,
        title: 'Form',
        app: 'form',
        ts: 1,
        elementsJson:
          '{"1":{"p":"push button","t":"OK","b":[1,2,3,4]},"2":{"p":"text","e":1,"t":"Name","b":[0,0,9,9]},"3":{"p":"text","t":"x","b":[0,0,1,1]}}',
      },
      dir,
    );
    const ctx = loadContext(7, dir)!;
    expect(signatureOf(ctx.elements['1']!)).toEqual({ r: 'btn', t: 'OK', b: [1, 2, 3, 4] });
    expect(signatureOf(ctx.elements['2']!).r).toBe('input');
    expect(signatureOf(ctx.elements['3']!).r).toBe('txt');
    // a context an older desktop-cli left (short roles already)
    expect(signatureOf({ r: 'link', t: 'Docs', b: [5, 6, 7, 8] })).toEqual({
      r: 'link',
      t: 'Docs',
      b: [5, 6, 7, 8],
    });
  });
});
