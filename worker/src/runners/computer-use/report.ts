/** report.md: a person's account of one computer-use run (steps, screenshots, outcome, cost). */
import { writeFileSync } from 'node:fs';
import type { RunnerOutcome } from '../runner.ts';

export interface StepRecord {
  step: number;
  tool: string;
  args: unknown;
  result?: Record<string, unknown>;
  error?: string;
  screen?: Record<string, unknown>;
  screenshot?: string;
  ms: number;
}

export interface ReportInput {
  card: string;
  runId: string;
  api: string;
  model: string;
  outcome: RunnerOutcome;
  steps: StepRecord[];
}

const cell = (v: unknown, max = 160): string => {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  const t = s.length > max ? `${s.slice(0, max)}…` : s;
  return t.replace(/\|/g, '\\|').replace(/\n/g, ' ');
};

export function renderReport(r: ReportInput): string {
  const m = r.outcome.metrics;
  const lines = [
    `# Computer-use run ${r.runId}`,
    '',
    `- Card: ${r.card}`,
    `- Status: **${r.outcome.status}**`,
    `- Summary: ${r.outcome.summary}`,
    `- Model: ${r.model} (${r.api})`,
    `- Steps: ${m.steps ?? 0}, tool calls: ${m.toolCalls ?? 0}, tokens: ${m.inputTokens ?? 0} in / ${m.outputTokens ?? 0} out` +
      (m.estimatedCostUsd !== undefined ? `, estimated cost: $${m.estimatedCostUsd}` : ''),
    '',
  ];
  if (r.outcome.questions?.length) {
    const line = (q: NonNullable<RunnerOutcome['questions']>[number]): string =>
      typeof q === 'string'
        ? `- ${q}`
        : `- ${q.question}${q.options?.length ? ` (options: ${q.options.map((o) => (o === q.recommended ? `${o}, recommended` : o)).join('; ')})` : ''}`;
    lines.push('## Questions', '', ...r.outcome.questions.map(line), '');
  }
  lines.push(
    '## Steps',
    '',
    '| step | tool | arguments | result | screen | screenshot | ms |',
    '|---|---|---|---|---|---|---|',
  );
  for (const s of r.steps)
    lines.push(
      `| ${s.step} | ${s.tool} | ${cell(s.args)} | ${s.error ? `**invalid**: ${cell(s.error)}` : cell(s.result)} | ${s.screen ? cell(s.screen) : ''} | ${s.screenshot ? `[${s.screenshot}](${s.screenshot})` : ''} | ${Math.round(s.ms)} |`,
    );
  lines.push('');
  return lines.join('\n');
}

export function writeReport(file: string, r: ReportInput): void {
  writeFileSync(file, renderReport(r));
}
