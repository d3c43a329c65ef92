/**
 * predict_action (seed 002): one compact user query (task, subtask and its expected outcome, resolved
 * params, task memory, this subtask's recent history, its reference steps, the extracts of its
 * dependencies, and the step replay could not do by itself) plus the current screenshot → exactly one
 * tool call: an OS action (`computer_use`), `done`, or `stuck` (a question for the person). Each call is
 * a fresh request: what the model needs to know is in the query, not in a growing conversation.
 */
import type { PromptConfigOf } from '../../desktop/prompt.ts';
import type { Shot } from '../../desktop/screen.ts';
import { TOOL_SCHEMAS } from '../../desktop/tools.ts';
import { makeProvider, type Api, type ModelTurn, type OfferedTool } from '../../models/conversation.ts';
import { fill } from '../../models/prompt.ts';
import type { PlanStep, PlanSubtask, Values } from './plan.ts';

export const PREDICT_TOOLS = ['computer_use', 'done', 'stuck'] as const;
export type PredictTool = (typeof PREDICT_TOOLS)[number];

const noteFields = {
  observation: { type: 'string', description: 'what the current screenshot shows that justifies this call' },
  memory: { type: 'string', description: 'the updated task memory to carry forward' },
};

const actionSchema = TOOL_SCHEMAS.desktop_action as { properties: Record<string, unknown> };

export const PREDICT_SCHEMAS: Record<PredictTool, Record<string, unknown>> = {
  computer_use: {
    type: 'object',
    properties: { ...actionSchema.properties, ...noteFields },
    required: ['action', 'observation', 'memory'],
    additionalProperties: false,
  },
  done: {
    type: 'object',
    properties: {
      ...noteFields,
      value: { type: 'string', description: 'for an extract: the value read off the screen' },
    },
    required: ['observation', 'memory'],
    additionalProperties: false,
  },
  stuck: {
    type: 'object',
    properties: {
      observation: noteFields.observation,
      question: { type: 'string', description: 'what the person should answer or do' },
    },
    required: ['observation', 'question'],
    additionalProperties: false,
  },
};

export interface HistoryEntry {
  step: number;
  action: string;
  observation: string;
}

export interface QueryInput {
  task: string;
  description: string;
  subtask: PlanSubtask;
  values: Values;
  memory: string;
  history: HistoryEntry[];
  /** The subtask's steps with their templates filled in. */
  reference: PlanStep[];
  /** Upstream extracts this subtask depends on. */
  extracts: Values;
  /** What replay asks of the model now: the step it could not do, and why; or the outcome to reach. */
  ask: string;
}

/** The subtask's recent history the query carries (seed: "last few actions/observations"). */
export const HISTORY_LIMIT = 6;

const describe = (s: PlanStep): string => {
  const a = s.action as Record<string, unknown>;
  const parts = Object.entries(a)
    .filter(([k]) => k !== 'type')
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  const on = s.element
    ? ` on ${s.element.role} "${s.element.name}"`
    : s.focus
      ? ` in ${s.focus.role} "${s.focus.name}"`
      : '';
  return `${s.n}. ${s.intent || a.type}: ${String(a.type)}${parts.length ? ` (${parts.join(', ')})` : ''}${on}${s.expectedState ? `; before it: ${s.expectedState}` : ''}${s.postAction ? `; after it: ${s.postAction}` : ''}`;
};

const list = (v: Values): string =>
  Object.keys(v).length
    ? Object.entries(v)
        .map(([k, x]) => `- ${k}: ${x}`)
        .join('\n')
    : '(none)';

export function userQuery(template: string, q: QueryInput): string {
  return fill(template, {
    TASK: q.task,
    TASK_DESCRIPTION: q.description || q.task,
    SUBTASK: q.subtask.text,
    EXPECTED_OUTCOME: q.subtask.expectedOutcome || '(not stated)',
    PARAMS: list(q.values),
    TASK_MEMORY: q.memory || '(empty)',
    HISTORY: q.history.length
      ? q.history
          .slice(-HISTORY_LIMIT)
          .map((h) => `- step ${h.step}: ${h.action} (${h.observation})`)
          .join('\n')
      : '(none yet)',
    REFERENCE_STEPS: q.reference.map(describe).join('\n') || '(none)',
    DEPENDENCIES: list(q.extracts),
    ASK: q.ask,
  });
}

export interface Prediction {
  turn: ModelTurn;
  requestBytes: number;
}

/** One predict_action request (no retry here: the caller's policy wraps it). */
export async function predict(
  api: Api,
  o: { baseUrl: string; token: string; model: string; maxOutputTokens: number; timeoutMs: number },
  config: PromptConfigOf<PredictTool>,
  query: string,
  shot: Shot,
  caption: string,
  signal: AbortSignal,
  /** The document tools the flow grants (read_document, …), offered beside the three. */
  documents: OfferedTool[] = [],
): Promise<Prediction> {
  const provider = makeProvider(api, {
    ...o,
    tools: [
      ...PREDICT_TOOLS.map((name) => ({
        name,
        description: config.tools[name],
        schema: PREDICT_SCHEMAS[name],
      })),
      ...documents,
    ],
  });
  provider.begin(query, shot, caption);
  const turn = await provider.send(signal);
  return { turn, requestBytes: provider.lastRequestBytes };
}
