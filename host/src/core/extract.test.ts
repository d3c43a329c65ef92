import { describe, expect, it } from 'vitest';
import { extractionSpec, ExtractRefused } from './extract.ts';
import { parseConfig } from './project.ts';

const USER = {
  file: '/home/u/.config/runboard/config.yaml',
  text: 'version: 2\nllm_profiles:\n  watcher: { provider: gemini, model: gemini-2.5-flash }\n',
};

describe('the FlowSpec of an extraction run', () => {
  it("takes the provider and model of the flow's profile (user config) over the prompt folder's llm", () => {
    const cfg = parseConfig(
      '/p/config.yaml',
      'version: 2\nflows:\n  extract: { runner: extract, prompt: ../prompts/x, profile: watcher }\n',
      USER,
    );
    const spec = extractionSpec('extract', cfg.flows.extract!, '/p', cfg, {
      provider: 'openai',
      model: 'gpt-5',
    });
    expect(spec).toMatchObject({
      name: 'extract',
      runner: 'extract',
      provider: 'gemini',
      model: 'gemini-2.5-flash',
      readOnly: true,
    });
  });

  it("the flow's own provider and model win; the prompt's llm fills what neither sets", () => {
    const cfg = parseConfig(
      '/p/config.yaml',
      'version: 2\nflows:\n  extract: { runner: extract, prompt: ../prompts/x, profile: watcher, model: own-model }\n  plain: { runner: extract, prompt: ../prompts/x }\n',
      USER,
    );
    expect(extractionSpec('extract', cfg.flows.extract!, '/p', cfg, {})).toMatchObject({
      provider: 'gemini',
      model: 'own-model',
    });
    expect(
      extractionSpec('plain', cfg.flows.plain!, '/p', cfg, { provider: 'openai', model: 'gpt-5' }),
    ).toMatchObject({ provider: 'openai', model: 'gpt-5' });
    expect(() => extractionSpec('plain', cfg.flows.plain!, '/p', cfg, {})).toThrow(ExtractRefused);
    expect(() => extractionSpec('plain', cfg.flows.plain!, '/p', cfg, {})).toThrow(
      /neither flow plain nor \/prompts\/x\/config\.yaml names a provider/,
    );
  });
});
