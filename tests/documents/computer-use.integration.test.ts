// The document tools in the computer-use loop: a real run (supervisor, jail, worker, the OpenAI and
// Anthropic SDKs against the scripted model server) reads a DOCX of its workspace with read_document
// and types the customer's name it found there into the GTK form; the form's own state proves it. The
// card's `@customer.docx` reaches the prompt as metadata only. A path outside the workspace is asked
// at the tool call: the run waits for the person, then reads it (Allow) or goes on without (Deny).
import { execFileSync } from 'node:child_process';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { toolOutputs, type TurnFn } from '../fixtures/model-server/server.ts';
import { writeProviderKey } from '../../supervisor/src/common/secrets.ts';
import { act, CuHarness, cuEvents, find, final, imagePoint } from '../cu/cu-harness.ts';
import { waitUntil } from '../helpers/harness.ts';
import { docx, png } from './fixtures.ts';

let t: CuHarness;
beforeAll(async () => {
  t = await CuHarness.start();
  await docx(path.join(t.h.workspace, 'customer.docx'));
  writeFileSync(path.join(t.h.workspace, 'red.png'), await png());
  // a 2 s test pattern, as a short screen recording would be
  testClip(path.join(t.h.workspace, 'clip.mp4'));
}, 60_000);
afterEach(async () => {
  await t.closeForms();
});
afterAll(async () => {
  await t?.stop();
});

/** A 2 s video of ffmpeg's test pattern. */
function testClip(file: string): void {
  execFileSync('ffmpeg', [
    '-v',
    'error',
    '-f',
    'lavfi',
    '-i',
    'testsrc=duration=2:size=320x240:rate=10',
    '-y',
    file,
  ]);
}

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
    // read at once: the run's `type` returned only once the form had handled the keys (decision 119;
    // before it, CI read 'Ada Lovela', the rest still in the form's queue)
    expect((await find(title, (e) => e.name === 'Name' && e.role === 'text')).value).toBe('Ada Lovelace');
    const steps = cuEvents(rec, 'cu-step');
    expect(steps[0]).toMatchObject({ tool: 'read_document', action: 'read_document' });
    expect(JSON.stringify(steps[0]!.result)).toContain('| City | London |');
  });

  it('a read-only flow offers the tools that only read; documents: false none (Anthropic tools)', async () => {
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
    expect(seen[0]).toEqual(['computer', 'desktop_read', 'terminal_exec', 'read_document', 'analyze_media']);
    expect(seen[1]).toEqual(['computer', 'desktop_read', 'terminal_exec']);
  });

  /** Waits until the run asks at its tool call (its record while it runs), then answers a1. */
  async function answer(runId: string, choice: 'allow' | 'deny'): Promise<void> {
    await waitUntil(
      'the run to ask at the tool call',
      async () => ((await t.h.client.getRun(runId)).run.asks ?? []).length > 0,
      30_000,
    );
    await t.h.client.answerAsk({ runId, ask: 'a1', choice });
  }

  // Before issue 28's asks at the tool call, such a path stopped the run (needs-input) and the next run
  // started over; now the tool waits for the person's answer and the run goes on either way.
  it('a path outside the workspace is asked at the tool call; Deny: the model gets the denial, nothing is read', async () => {
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
          final({ status: 'SUCCESS', summary: 'went on without it', error: '', questions: [] }),
        ],
      },
    ]);
    const { runId } = await t.launch(t.card('Outside', 'CU-OUTSIDE-MARKER read the private file'), t.flow());
    await answer(runId, 'deny');
    const rec = await t.h.collect(runId);
    expect(rec.result.status, rec.result.summary).toBe('succeeded');
    expect(rec.result.asks).toEqual([
      expect.objectContaining({ id: 'a1', kind: 'read', path: realpathSync(beside) }),
    ]);
    const reqs = t.model.requests.filter((r) => r.episode === 'cu-docs-outside');
    expect(reqs).toHaveLength(2);
    expect(JSON.stringify(reqs[1]!.body)).toContain('the person denied read');
    expect(JSON.stringify(reqs)).not.toContain('secret-beside-the-cu-workspace');
  });

  it('Allow at the tool call: the same run reads the file and goes on', async () => {
    const beside = path.join(t.h.root, 'beside-cu-allowed');
    mkdirSync(beside, { recursive: true });
    const notes = path.join(beside, 'notes.md');
    writeFileSync(notes, 'the-allowed-notes\n');
    t.episodes([
      {
        name: 'cu-docs-allowed',
        match: 'CU-ALLOWED-MARKER',
        turns: [
          { toolCalls: [{ name: 'read_document', arguments: { path: notes } }] },
          final({ status: 'SUCCESS', summary: 'read it', error: '', questions: [] }),
        ],
      },
    ]);
    const { runId } = await t.launch(t.card('Allowed', 'CU-ALLOWED-MARKER read the notes'), t.flow());
    await answer(runId, 'allow');
    const rec = await t.h.collect(runId);
    expect(rec.result.status, rec.result.summary).toBe('succeeded');
    expect(rec.result.runId).toBe(runId);
    const reqs = t.model.requests.filter((r) => r.episode === 'cu-docs-allowed');
    expect(reqs).toHaveLength(2);
    expect(JSON.stringify(reqs[1]!.body)).toContain('the-allowed-notes');
    expect(JSON.stringify(cuEvents(rec, 'cu-step')[0]!.result)).toContain('the-allowed-notes');
  });
});

/** The vision model's side of analyze_media: its request carries the media and asks for the seed's JSON. */
const VISION = {
  name: 'vision',
  match: 'Describe this media for an agent',
  requireTools: false,
  turns: [{ text: '{"summary": "a red rectangle", "tags": ["red"], "text": ""}' }],
};

describe('analyze_media', () => {
  const eyes = { profile: 'eyes', provider: 'openai', model: 'vision-test' };

  it("describes an image and a video through the run's proxy route with the flow's vision profile", async () => {
    t.episodes([
      VISION,
      {
        name: 'cu-vision',
        match: 'CU-VISION-MARKER',
        turns: [
          { toolCalls: [{ name: 'analyze_media', arguments: { path: 'red.png' } }] },
          { toolCalls: [{ name: 'analyze_media', arguments: { path: 'clip.mp4' } }] },
          final({ status: 'SUCCESS', summary: 'looked', error: '', questions: [] }),
        ],
      },
    ]);
    const rec = await t.run(
      t.card('Look', 'CU-VISION-MARKER what is in @red.png?'),
      t.flow({ vision: eyes }),
    );
    expect(rec.result.status, rec.result.summary).toBe('succeeded');
    const [image, video] = cuEvents(rec, 'cu-step').map((s) => s.result as { ok: boolean; text: string });
    expect(image!.ok).toBe(true);
    expect(JSON.parse(image!.text)).toEqual({
      path: 'red.png',
      media_type: 'image',
      model: 'vision-test',
      summary: 'a red rectangle',
      tags: ['red'],
      text: '',
    });
    expect(JSON.parse(video!.text)).toMatchObject({ path: 'clip.mp4', media_type: 'video', frames: 4 });
    // The vision requests: the profile's model, the media as data URLs, the real key added by the proxy.
    const asked = t.model.requests.filter((r) => r.episode === 'vision');
    expect(asked).toHaveLength(2);
    expect(asked[0]!.body?.model).toBe('vision-test');
    expect(asked[0]!.headers.authorization).toBe('Bearer sk-test-openai-0123456789');
    expect(JSON.stringify(asked[0]!.body).match(/data:image\/png;base64,/g)).toHaveLength(1);
    expect(JSON.stringify(asked[1]!.body).match(/data:image\/jpeg;base64,/g)).toHaveLength(4);
  });

  it('a "video" that is a playlist of a file outside the workspace is not followed (attack)', async () => {
    const beside = path.join(t.h.root, 'beside-media');
    mkdirSync(beside, { recursive: true });
    const outsideClip = path.join(beside, 'private.mp4');
    testClip(outsideClip);
    // ffmpeg probes content, not names: an HLS playlist saved as .mp4 would make it read the file it names
    writeFileSync(
      path.join(t.h.workspace, 'evil.mp4'),
      `#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n${outsideClip}\n#EXT-X-ENDLIST\n`,
    );
    t.episodes([
      VISION,
      {
        name: 'cu-evil-media',
        match: 'CU-EVIL-MEDIA-MARKER',
        turns: [
          { toolCalls: [{ name: 'analyze_media', arguments: { path: 'evil.mp4' } }] },
          final({ status: 'SUCCESS', summary: 'tried', error: '', questions: [] }),
        ],
      },
    ]);
    const before = t.model.requests.filter((r) => r.episode === 'vision').length;
    const rec = await t.run(
      t.card('Evil', 'CU-EVIL-MEDIA-MARKER describe evil.mp4'),
      t.flow({ vision: eyes }),
    );
    expect(rec.result.status, rec.result.summary).toBe('succeeded');
    const result = cuEvents(rec, 'cu-step')[0]!.result as { ok: boolean; error?: string };
    expect(result.ok, JSON.stringify(result)).toBe(false);
    expect(result.error).toMatch(/evil\.mp4: ffprobe could not read it/);
    // nothing was sent to the vision model
    expect(t.model.requests.filter((r) => r.episode === 'vision').length).toBe(before);
  });

  it("a vision profile of another provider than the run's (Anthropic, Gemini, GLM with a whole video) goes through the run's vision route with that provider's key", async () => {
    writeProviderKey(t.h.paths, 'gemini', 'gemini-test-key-0123456789');
    writeProviderKey(t.h.paths, 'zhipu', 'zhipu-test-key-0123456789');
    const cases = [
      { profile: 'claude-eyes', provider: 'anthropic', model: 'claude-eyes', file: 'red.png' },
      { profile: 'gemini-eyes', provider: 'gemini', model: 'gemini-eyes', file: 'red.png' },
      { profile: 'glm', provider: 'zhipu', model: 'glm-4.6v', file: 'clip.mp4' },
    ];
    for (const c of cases) {
      const marker = `CU-CROSS-${c.provider.toUpperCase()}-MARKER`;
      t.episodes([
        VISION,
        {
          name: `cu-cross-${c.provider}`,
          match: marker,
          turns: [
            { toolCalls: [{ name: 'analyze_media', arguments: { path: c.file } }] },
            final({ status: 'SUCCESS', summary: 'looked', error: '', questions: [] }),
          ],
        },
      ]);
      const before = t.model.requests.length;
      const { file, ...vision } = c;
      // the run's own provider is openai (t.flow); the vision profile's is another
      const rec = await t.run(t.card('Look', `${marker} what is in ${file}?`), t.flow({ vision }));
      expect(rec.result.status, rec.result.summary).toBe('succeeded');
      const result = cuEvents(rec, 'cu-step')[0]!.result as { ok: boolean; text: string; error?: string };
      expect(result.ok, JSON.stringify(result)).toBe(true);
      expect(JSON.parse(result.text)).toMatchObject({ model: c.model, summary: 'a red rectangle' });
      const asked = t.model.requests.slice(before).filter((r) => r.episode === 'vision');
      expect(asked, c.provider).toHaveLength(1);
      const q = asked[0]!;
      if (c.provider === 'anthropic') {
        expect(q.path).toBe('/v1/messages');
        expect(q.headers['x-api-key']).toBe('sk-ant-test-0123456789');
        expect(q.body?.model).toBe('claude-eyes');
      } else if (c.provider === 'gemini') {
        expect(q.path).toBe('/v1beta/models/gemini-eyes:generateContent');
        expect(q.headers['x-goog-api-key']).toBe('gemini-test-key-0123456789');
        // the Gemini SDK's inline data (camelCase, which the API takes as it takes snake_case)
        expect(JSON.stringify(q.body)).toMatch(/"(mime_type|mimeType)":"image\/png"/);
      } else {
        // GLM: its Chat Completions path, the whole video as video_url (no frames taken)
        expect(q.path).toBe('/v4/chat/completions');
        expect(q.headers.authorization).toBe('Bearer zhipu-test-key-0123456789');
        expect(q.body?.model).toBe('glm-4.6v');
        const content = (
          q.body!.messages as { content: { type: string; video_url?: { url: string } }[] }[]
        )[0]!.content;
        expect(content.map((p) => p.type)).toEqual(['video_url', 'text']);
        expect(content[0]!.video_url!.url).toMatch(/^data:video\/mp4;base64,AAAA/);
        expect(JSON.parse(result.text)).not.toHaveProperty('frames');
      }
      // no request of the run's own provider carried the vision provider's key, nor the other way
      expect(
        JSON.stringify(t.model.requests.slice(before).filter((r) => r.episode !== 'vision')),
      ).not.toMatch(/sk-ant-test|gemini-test-key|zhipu-test-key/);
    }
  });

  it('without a vision profile, or with a provider the supervisor does not know, it answers what to set', async () => {
    t.episodes([
      VISION,
      {
        name: 'cu-novision',
        match: 'CU-NOVISION-MARKER',
        turns: [
          { toolCalls: [{ name: 'analyze_media', arguments: { path: 'red.png' } }] },
          final({
            status: 'NEEDS_CLARIFICATION',
            summary: 'vision not set up',
            error: '',
            questions: ['fix it'],
          }),
        ],
      },
    ]);
    const card = t.card('Look', 'CU-NOVISION-MARKER what is in red.png?');
    const errors: string[] = [];
    const before = t.model.requests.filter((r) => r.episode === 'vision').length;
    for (const vision of [undefined, { ...eyes, provider: 'nosuch' }]) {
      const rec = await t.run(card, t.flow(vision ? { vision } : {}));
      expect(rec.result.status, rec.result.summary).toBe('needs-input');
      errors.push((cuEvents(rec, 'cu-step')[0]!.result as { error: string }).error);
    }
    expect(errors[0]).toMatch(
      /^analyze_media cannot run: this flow has no vision profile\. Tell the person to add `visionProfile: NAME` to flow "desktop"/,
    );
    expect(errors[1]).toContain(
      'the supervisor gave this run no route to provider nosuch of vision profile "eyes"',
    );
    expect(t.model.requests.filter((r) => r.episode === 'vision')).toHaveLength(before);
  });
});
