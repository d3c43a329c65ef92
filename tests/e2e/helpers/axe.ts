/**
 * Accessibility checks with axe-core (the checker browsers' own devtools build on): its script is
 * evaluated in the page (over the DevTools protocol, so the page's strict CSP does not apply), then
 * `axe.run` checks the page as it is at that moment.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const source = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

/** The serious and critical violations on the page (or under `selector`), each with where it is. */
export async function seriousViolations(page: Page, selector?: string): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(source);
  const violations = await page.evaluate(async (sel) => {
    const axe = (window as unknown as { axe: { run: (ctx: unknown, o: unknown) => Promise<unknown> } }).axe;
    const r = (await axe.run(sel ?? document, { resultTypes: ['violations'] })) as {
      violations: AxeViolation[];
    };
    return r.violations;
  }, selector);
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help}: ${v.nodes
          .slice(0, 5)
          .map(
            (n) =>
              `${n.target.join(' ')}${n.failureSummary ? ` [${n.failureSummary.replace(/\s+/g, ' ')}]` : ''}`,
          )
          .join('; ')}`,
    );
}
