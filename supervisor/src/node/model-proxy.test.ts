import { describe, expect, it } from 'vitest';
import { pathProblem, runnerApis, totalConnections } from './model-proxy.ts';

describe('the model proxy’s path rules', () => {
  it('takes paths in their normal form', () => {
    for (const p of [
      '/openai/v1/responses',
      '/anthropic/v1/messages',
      '/gemini/v1beta/models/gemini-2.5-pro:generateContent',
      '/gemini/upload/v1beta/files',
      '/gemini',
    ])
      expect(pathProblem(p), p).toBeNull();
  });

  it('refuses dots, encodings, backslashes and empty segments rather than resolving them', () => {
    for (const p of [
      '/gemini/v1beta/./files',
      '/gemini/v1beta/x/../files',
      '/gemini/v1beta/%2e/files',
      '/gemini/v1beta/%2E%2E/files',
      '/gemini/v1beta%2ffiles',
      '/gemini/v1beta%5cfiles',
      '/gemini/v1beta\\files',
      '//gemini/v1beta/files',
      '/gemini//v1beta/files',
      '/openai/v1/responses/',
      '/openai/v1/responses/.',
      '/openai/v1/responses/..',
      'openai/v1/responses',
    ])
      expect(pathProblem(p), p).not.toBeNull();
  });
});

describe('what each runner’s token may ask', () => {
  it('is the API its runner speaks, and nothing for a command run', () => {
    expect(runnerApis({ runner: 'codex', provider: 'openai' })).toEqual(['responses']);
    expect(runnerApis({ runner: 'claude', provider: 'anthropic' })).toEqual(['messages']);
    expect(runnerApis({ runner: 'computer-use', provider: 'anthropic' })).toEqual(['messages']);
    expect(runnerApis({ runner: 'computer-use', provider: 'openai' })).toEqual(['responses']);
    expect(runnerApis({ runner: 'computer-use', provider: 'local' })).toEqual(['chat']);
    expect(runnerApis({ runner: 'computer-use', provider: 'gemini' })).toEqual(['chat']);
    expect(runnerApis({ runner: 'replay', provider: 'openai', computerUse: { api: 'chat' } })).toEqual([
      'chat',
    ]);
    expect(runnerApis({ runner: 'extract', provider: 'gemini' })).toEqual(['gemini']);
    expect(runnerApis({ runner: 'extract', provider: 'gemini', extract: { api: 'chat' } })).toEqual(['chat']);
    expect(runnerApis({ runner: 'reflect', provider: 'zhipu' })).toEqual(['chat']);
    expect(runnerApis({ runner: 'command', provider: 'openai' })).toEqual([]);
  });
});

describe('the bound on proxy connections over all runs', () => {
  it('keeps a quarter of the descriptors (at least 512) and halves the rest (two per proxied request)', () => {
    expect(totalConnections(20_000)).toBe(7500);
    expect(totalConnections(4096)).toBe(1536);
    expect(totalConnections(1024)).toBe(256);
    expect(totalConnections(256)).toBe(64);
  });
});
