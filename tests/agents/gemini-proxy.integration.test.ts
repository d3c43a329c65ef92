/**
 * The model proxy's `gemini` provider with the official @google/genai SDK: the Files API's resumable
 * upload (whose byte URL the upstream names) goes through the run's own listener, with the real key
 * added there and the run's token never forwarded; an upload URL on another host is dropped (the bytes
 * and the key go nowhere else); listing the key's files (other runs' uploads) is refused.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { FileState, GoogleGenAI } from '@google/genai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelProxy, providerRoutes, runnerApis } from '../../supervisor/src/node/model-proxy.ts';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';

const KEY = 'AIza-the-real-key-0123456789';
/** The routes of an extract run's token with Gemini (the video through the Files API). */
const EXTRACT = { runner: 'extract', apis: runnerApis({ runner: 'extract', provider: 'gemini' }) };
let model: ModelServer;
let proxy: ModelProxy;
let dir: string;
let elsewhere: http.Server;
const elsewhereHits: string[] = [];

beforeAll(async () => {
  model = await startModelServer({
    episodes: [
      {
        name: 'describe',
        match: 'EPISODE:describe',
        requireTools: false,
        turns: [{ text: 'a video of a form' }],
      },
    ],
    gemini: { pollsBeforeActive: 2 },
  });
  proxy = new ModelProxy(
    providerRoutes({ RUNBOARD_PROVIDER_GEMINI_URL: model.url }),
    (p) => (p === 'gemini' ? KEY : null),
    pino({ level: 'silent' }),
  );
  elsewhere = http.createServer((req, res) => {
    elsewhereHits.push(`${req.method} ${req.url} ${JSON.stringify(req.headers)}`);
    res.end();
  });
  await new Promise<void>((r) => elsewhere.listen(0, '127.0.0.1', r));
  dir = mkdtempSync(path.join(os.tmpdir(), 'rb-gemini-proxy-'));
});

afterAll(async () => {
  await proxy.close();
  await model.close();
  await new Promise<void>((r) => elsewhere.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

describe('the gemini provider of the model proxy', () => {
  it('carries the Files API sequence and generateContent, with the real key added at the proxy only', async () => {
    const grant = await proxy.grant('20250101-000000-aaaaaa', 'gemini', undefined, EXTRACT);
    expect(grant.baseUrl).toBe(`http://127.0.0.1:${grant.port}/gemini`);
    // 9 MiB: two chunks (the SDK sends 8 MiB at a time), the last one finalizes
    const file = path.join(dir, 'clip.mp4');
    writeFileSync(file, Buffer.alloc(9 * 1024 * 1024, 7));
    const ai = new GoogleGenAI({ apiKey: grant.token, httpOptions: { baseUrl: grant.baseUrl } });
    const up = await ai.files.upload({ file, config: { mimeType: 'video/mp4' } });
    let f = up;
    while (f.state !== FileState.ACTIVE) f = await ai.files.get({ name: up.name! });
    const r = await ai.models.generateContent({
      model: 'gemini-2.5-pro',
      contents: [
        {
          role: 'user',
          parts: [{ fileData: { fileUri: f.uri!, mimeType: 'video/mp4' } }, { text: 'EPISODE:describe' }],
        },
      ],
    });
    expect(r.text).toBe('a video of a form');
    const stored = model.gemini.files.get(up.name!)!;
    expect(stored.received).toBe(9 * 1024 * 1024);
    expect(stored.chunks).toBe(3); // start + two chunks
    // every request reached the upstream through the proxy: with the real key, never the token
    const seen = model.requests.filter((q) => q.api === 'gemini' || q.api === 'gemini-files');
    expect(seen.length).toBeGreaterThanOrEqual(6);
    for (const q of seen) {
      expect(q.headers['x-goog-api-key']).toBe(KEY);
      expect(JSON.stringify(q.headers)).not.toContain(grant.token);
    }
    await ai.files.delete({ name: up.name! });
    expect(stored.deleted).toBe(true);
    proxy.revoke(grant.token);
  });

  it('drops an upload URL on another host: the bytes and the key never go there', async () => {
    const port = (elsewhere.address() as AddressInfo).port;
    model.gemini.options.uploadOrigin = `http://127.0.0.1:${port}`;
    try {
      const grant = await proxy.grant('20250101-000000-bbbbbb', 'gemini', undefined, EXTRACT);
      const file = path.join(dir, 'small.mp4');
      writeFileSync(file, Buffer.alloc(1000, 1));
      const ai = new GoogleGenAI({ apiKey: grant.token, httpOptions: { baseUrl: grant.baseUrl } });
      await expect(ai.files.upload({ file, config: { mimeType: 'video/mp4' } })).rejects.toThrow(
        /upload url/i,
      );
      expect(elsewhereHits).toEqual([]);
      proxy.revoke(grant.token);
    } finally {
      delete model.gemini.options.uploadOrigin;
    }
  });

  it("refuses listing the key's files (they include other runs' uploads)", async () => {
    const grant = await proxy.grant('20250101-000000-cccccc', 'gemini', undefined, EXTRACT);
    const before = model.requests.length;
    const r = await fetch(`${grant.baseUrl}/v1beta/files`, { headers: { 'x-goog-api-key': grant.token } });
    expect(r.status).toBe(403);
    expect(((await r.json()) as { error: { message: string } }).error.message).toMatch(/other runs/);
    expect(model.requests.length).toBe(before);
    proxy.revoke(grant.token);
  });

  it('refuses the file listing however the path is spelled, and other API versions, before anything goes upstream', async () => {
    const grant = await proxy.grant('20250101-000000-dddddd', 'gemini', undefined, EXTRACT);
    const port = grant.port;
    const before = model.requests.length;
    // Sent raw, as written: fetch and the URL class would resolve the dots themselves.
    const raw = (method: string, p: string): Promise<{ status: number; body: string }> =>
      new Promise((resolve, reject) => {
        const req = http.request(
          { host: '127.0.0.1', port, method, path: p, headers: { 'x-goog-api-key': grant.token } },
          (res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.end();
      });
    for (const p of [
      '/gemini/v1beta/./files',
      '/gemini/v1beta/%2e/files',
      '/gemini/v1beta/%2E%2E/v1beta/files',
      '/gemini/v1beta/x/../files',
      '/gemini/v1alpha/files',
      '/gemini/v1/files',
      '/gemini//v1beta/files',
      '/gemini/v1beta//files',
      '/gemini/v1beta%2ffiles',
      '/gemini/v1beta/files/',
      '/gemini/v1beta/cachedContents',
      '/gemini/v1beta/tunedModels',
      '/gemini/v1beta/models',
    ]) {
      const r = await raw('GET', p);
      expect(r.status, `GET ${p}: ${r.body}`).toBe(403);
      expect(r.body).toContain('runboard proxy');
    }
    for (const [m, p] of [
      ['POST', '/gemini/v1alpha/models/gemini-2.5-pro:generateContent'],
      ['POST', '/gemini/v1beta/models/gemini-2.5-pro:embedContent'],
      ['POST', '/gemini/v1beta/models/%2e%2e/files:generateContent'],
      ['PATCH', '/gemini/v1beta/files/abc'],
    ] as const) {
      const r = await raw(m, p);
      expect(r.status, `${m} ${p}: ${r.body}`).toBe(403);
    }
    expect(model.requests.slice(before).map((q) => `${q.method} ${q.path}`)).toEqual([]);
    proxy.revoke(grant.token);
  });
});
