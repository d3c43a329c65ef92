/** report.md of a replay run: which steps ran by locator and which by the model, and what that saved. */
import type { RunnerOutcome } from '../runner.ts';

export interface ReplayRecord {
  /** The run's step (the filmstrip's number). */
  n: number;
  subtask: string;
  /** The workflow's step it stands for (none: the model worked towards a subtask's outcome). */
  planStep?: number;
  action: string;
  mode: 'locator' | 'model';
  /** Why the model was asked. */
  why?: string;
  ms: number;
  tokens?: number;
  error?: string;
}

export interface ReplayReportInput {
  card: string;
  runId: string;
  task: string;
  model: string;
  values: Record<string, string>;
  extracts: Record<string, string>;
  outcome: RunnerOutcome;
  records: ReplayRecord[];
  /** Sensitive parameters (their names only) and what happened to them that the person should know. */
  secrets?: { names: string[]; notes: string[] };
}

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderReplayReport(r: ReplayReportInput): string {
  const m = r.outcome.metrics;
  const kv = (o: Record<string, string>): string[] =>
    Object.keys(o).length ? Object.entries(o).map(([k, v]) => `- \`${k}\`: ${cell(v)}`) : ['- (none)'];
  const lines = [
    `# Replay run ${r.runId}`,
    '',
    `- Card: ${r.card}`,
    `- Workflow: ${r.task}`,
    `- Status: **${r.outcome.status}**`,
    `- Summary: ${r.outcome.summary}`,
    `- Model: ${r.model}`,
    `- Steps by locator: ${m.replayLocatorSteps ?? 0}, by the model: ${m.replayModelSteps ?? 0}, model calls: ${m.replayModelCalls ?? 0}`,
    `- Tokens: ${m.inputTokens ?? 0} in / ${m.outputTokens ?? 0} out; saved by the locator steps (estimate): ${m.tokensSavedEstimate ?? 0}`,
    '',
    '## Parameters',
    '',
    ...kv(r.values),
    '',
    '## Extracts',
    '',
    ...kv(r.extracts),
    '',
  ];
  if (r.secrets?.names.length)
    lines.push(
      '## Sensitive parameters',
      '',
      `- ${r.secrets.names.map((k) => `\`${k}\``).join(', ')}: typed by replay, never sent to the model, logged or kept; the fields they were typed into are grey in the screenshots.`,
      ...r.secrets.notes.map((n) => `- ${n}`),
      '',
    );
  if (r.outcome.questions?.length)
    lines.push(
      '## Questions',
      '',
      ...r.outcome.questions.map((q) => `- ${typeof q === 'string' ? q : q.question}`),
      '',
    );
  lines.push(
    '## Steps',
    '',
    '| step | subtask | workflow step | action | ran by | why the model | tokens | ms | screenshot |',
    '|---|---|---|---|---|---|---|---|---|',
  );
  for (const s of r.records) {
    const shot = `step-${String(s.n).padStart(3, '0')}.jpg`;
    lines.push(
      `| ${s.n} | ${cell(s.subtask)} | ${s.planStep ?? ''} | ${cell(s.action)}${s.error ? ` (**${cell(s.error)}**)` : ''} | ${s.mode === 'model' ? 'model' : 'locator'} | ${s.why ? cell(s.why) : ''} | ${s.tokens ?? 0} | ${Math.round(s.ms)} | [${shot}](${shot}) |`,
    );
  }
  lines.push('');
  return lines.join('\n');
}
