/** Prompt text from a flow's prompt folder, filled in, and what the tokens of a model's answers cost. */

/** `{{NAME}}` in a template → vars.NAME (a name not given stays as written). */
export function fill(template: string, vars: Record<string, string>): string {
  return template.replace(/\{\{([A-Z_]+)\}\}/g, (m, k: string) => vars[k] ?? m);
}

/** A prompt folder's prices (USD per million tokens, by model, or `default`). */
export interface Pricing {
  llm: { pricing?: Record<string, { input: number; output: number }> };
}

export function estimateCost(cfg: Pricing, model: string, input: number, output: number): number | null {
  const p = cfg.llm.pricing?.[model] ?? cfg.llm.pricing?.default;
  if (!p) return null;
  return Math.round(((input * p.input + output * p.output) / 1e6) * 1e6) / 1e6;
}
