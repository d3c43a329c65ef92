/**
 * The three wire formats of the loop, each through its official SDK and the supervisor's proxy (the
 * SDK's key is this run's proxy token): OpenAI Responses (function tools), Chat Completions (any
 * OpenAI-compatible server), Anthropic Messages (its computer-use tool for the screen, custom tools for
 * desktop_read and terminal_exec). The conversation is sent whole every turn (stateless: no stored
 * responses) with the text history kept and only the latest screenshot left in it.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { dataUrl, type Shot } from './screen.ts';
import type { OfferedTool } from './tools.ts';

export type Api = 'responses' | 'chat' | 'messages';

export interface Usage {
  input: number;
  output: number;
}

export interface ToolCall {
  id: string;
  /** The loop's tool (the Anthropic `computer` tool is translated to `desktop_action`). */
  name: string;
  args: unknown;
  /** Set when the arguments were not valid JSON. */
  parseError?: string;
  raw: string;
}

export interface ModelTurn {
  text: string;
  calls: ToolCall[];
  usage: Usage;
}

export interface ToolReply {
  call: ToolCall;
  output: Record<string, unknown>;
}

export interface ProviderOptions {
  baseUrl: string;
  token: string;
  model: string;
  /** The tools offered, with what the model is told about each (prompt folder config). */
  tools: OfferedTool[];
  maxOutputTokens: number;
  timeoutMs: number;
}

export interface Provider {
  readonly api: Api;
  begin(prompt: string, shot: Shot, caption: string): void;
  /** One model request with the conversation so far; the answer joins the conversation. */
  send(signal: AbortSignal): Promise<ModelTurn>;
  /** Tool results of the last turn, and the fresh screenshot (null: the screen is unchanged). */
  reply(results: ToolReply[], shot: Shot | null, caption: string): void;
  /** Size of the last request body's JSON (for the benchmark and the step events). */
  lastRequestBytes: number;
}

function parseArgs(raw: string): { args: unknown; parseError?: string } {
  try {
    return { args: JSON.parse(raw || '{}') };
  } catch (err) {
    return { args: null, parseError: (err as Error).message };
  }
}

const json = (o: unknown): string => JSON.stringify(o);

// ─── OpenAI Responses ───────────────────────────────────────────────────────────────────────────

type RInput = OpenAI.Responses.ResponseInputItem;

class ResponsesProvider implements Provider {
  readonly api = 'responses' as const;
  lastRequestBytes = 0;
  private readonly client: OpenAI;
  private readonly input: RInput[] = [];
  private readonly tools: OpenAI.Responses.FunctionTool[];
  constructor(private readonly o: ProviderOptions) {
    this.client = new OpenAI({ apiKey: o.token, baseURL: o.baseUrl, maxRetries: 0, timeout: o.timeoutMs });
    this.tools = o.tools.map((t) => ({
      type: 'function',
      name: t.name,
      description: t.description,
      parameters: t.schema,
      strict: false,
    }));
  }
  private image(shot: Shot, caption: string): RInput {
    // Only the latest image stays: earlier screenshot messages keep their caption only.
    for (const it of this.input)
      if ('role' in it && it.role === 'user' && Array.isArray(it.content))
        it.content = it.content.filter((c) => c.type !== 'input_image');
    return {
      role: 'user',
      content: [
        { type: 'input_text', text: caption },
        { type: 'input_image', image_url: dataUrl(shot), detail: 'auto' },
      ],
    };
  }
  begin(prompt: string, shot: Shot, caption: string): void {
    this.input.push({ role: 'user', content: [{ type: 'input_text', text: prompt }] });
    this.input.push(this.image(shot, caption));
  }
  async send(signal: AbortSignal): Promise<ModelTurn> {
    const body = { model: this.o.model, input: this.input, tools: this.tools, store: false };
    this.lastRequestBytes = Buffer.byteLength(json(body));
    const r = await this.client.responses.create(
      { ...body, max_output_tokens: this.o.maxOutputTokens },
      { signal },
    );
    const calls: ToolCall[] = [];
    let text = '';
    for (const item of r.output) {
      if (item.type === 'message') {
        const t = item.content.map((c) => (c.type === 'output_text' ? c.text : '')).join('');
        text += t;
        this.input.push({ role: 'assistant', content: t });
      } else if (item.type === 'function_call') {
        calls.push({ id: item.call_id, name: item.name, raw: item.arguments, ...parseArgs(item.arguments) });
        this.input.push({
          type: 'function_call',
          call_id: item.call_id,
          name: item.name,
          arguments: item.arguments,
        });
      }
    }
    return { text, calls, usage: { input: r.usage?.input_tokens ?? 0, output: r.usage?.output_tokens ?? 0 } };
  }
  reply(results: ToolReply[], shot: Shot | null, caption: string): void {
    for (const r of results)
      this.input.push({ type: 'function_call_output', call_id: r.call.id, output: json(r.output) });
    if (shot) this.input.push(this.image(shot, caption));
  }
}

// ─── Chat Completions ───────────────────────────────────────────────────────────────────────────

type CMsg = OpenAI.Chat.ChatCompletionMessageParam;

class ChatProvider implements Provider {
  readonly api = 'chat' as const;
  lastRequestBytes = 0;
  private readonly client: OpenAI;
  private readonly messages: CMsg[] = [];
  private readonly tools: OpenAI.Chat.ChatCompletionTool[];
  constructor(private readonly o: ProviderOptions) {
    this.client = new OpenAI({ apiKey: o.token, baseURL: o.baseUrl, maxRetries: 0, timeout: o.timeoutMs });
    this.tools = o.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.schema },
    }));
  }
  private image(shot: Shot, caption: string): CMsg {
    for (const m of this.messages)
      if (m.role === 'user' && Array.isArray(m.content))
        m.content = m.content.filter((c) => c.type !== 'image_url');
    return {
      role: 'user',
      content: [
        { type: 'text', text: caption },
        { type: 'image_url', image_url: { url: dataUrl(shot) } },
      ],
    };
  }
  begin(prompt: string, shot: Shot, caption: string): void {
    this.messages.push({ role: 'user', content: [{ type: 'text', text: prompt }] });
    this.messages.push(this.image(shot, caption));
  }
  async send(signal: AbortSignal): Promise<ModelTurn> {
    const body = { model: this.o.model, messages: this.messages, tools: this.tools };
    this.lastRequestBytes = Buffer.byteLength(json(body));
    const r = await this.client.chat.completions.create(
      { ...body, max_completion_tokens: this.o.maxOutputTokens },
      { signal },
    );
    const msg = r.choices[0]?.message;
    const text = msg?.content ?? '';
    const calls: ToolCall[] = [];
    for (const c of msg?.tool_calls ?? [])
      if (c.type === 'function')
        calls.push({
          id: c.id,
          name: c.function.name,
          raw: c.function.arguments,
          ...parseArgs(c.function.arguments),
        });
    this.messages.push({
      role: 'assistant',
      content: text || null,
      ...(msg?.tool_calls?.length ? { tool_calls: msg.tool_calls } : {}),
    });
    return {
      text,
      calls,
      usage: { input: r.usage?.prompt_tokens ?? 0, output: r.usage?.completion_tokens ?? 0 },
    };
  }
  reply(results: ToolReply[], shot: Shot | null, caption: string): void {
    for (const r of results)
      this.messages.push({ role: 'tool', tool_call_id: r.call.id, content: json(r.output) });
    if (shot) this.messages.push(this.image(shot, caption));
  }
}

// ─── Anthropic Messages (computer-use tool) ─────────────────────────────────────────────────────

type AMsg = Anthropic.Beta.BetaMessageParam;
type ABlock = Anthropic.Beta.BetaContentBlockParam;
const COMPUTER_BETA = 'computer-use-2025-01-24';

/** The computer tool's actions → the loop's desktop_action arguments. */
export function fromComputerAction(input: Record<string, unknown>): Record<string, unknown> {
  const c = input.coordinate as [number, number] | undefined;
  const at = c ? { x: c[0], y: c[1] } : {};
  switch (input.action) {
    case 'left_click':
    case 'right_click':
    case 'double_click':
    case 'mouse_move':
      return { action: input.action, ...at };
    case 'left_click_drag': {
      const s = input.start_coordinate as [number, number] | undefined;
      return { action: 'drag', ...(s ? { x: s[0], y: s[1] } : {}), ...(c ? { to_x: c[0], to_y: c[1] } : {}) };
    }
    case 'type':
      return { action: 'type', text: input.text };
    case 'key':
      return { action: 'key', keys: input.text };
    case 'scroll':
      return { action: 'scroll', ...at, direction: input.scroll_direction, amount: input.scroll_amount };
    case 'wait':
      return { action: 'wait', ...(input.duration !== undefined ? { seconds: input.duration } : {}) };
    case 'screenshot':
    case 'cursor_position':
      return { action: input.action };
    default:
      return { action: `computer:${String(input.action)}` }; // refused by desktop_action as unknown
  }
}

class AnthropicProvider implements Provider {
  readonly api = 'messages' as const;
  lastRequestBytes = 0;
  private readonly client: Anthropic;
  private readonly messages: AMsg[] = [];
  private display: [number, number] = [1024, 768];
  constructor(private readonly o: ProviderOptions) {
    this.client = new Anthropic({ apiKey: o.token, baseURL: o.baseUrl, maxRetries: 0, timeout: o.timeoutMs });
  }
  private tools(): Anthropic.Beta.BetaToolUnion[] {
    // the computer tool stands for desktop_action; a tool set without it (replay's) is all custom tools
    const computer: Anthropic.Beta.BetaToolUnion[] = this.o.tools.some((t) => t.name === 'desktop_action')
      ? [
          {
            type: 'computer_20250124',
            name: 'computer',
            display_width_px: this.display[0],
            display_height_px: this.display[1],
          },
        ]
      : [];
    return [
      ...computer,
      // desktop_action is the computer tool above; the others are custom tools
      ...this.o.tools
        .filter((t) => t.name !== 'desktop_action')
        .map((t) => ({
          name: t.name,
          description: t.description,
          input_schema: t.schema as Anthropic.Beta.BetaTool.InputSchema,
        })),
    ];
  }
  private image(shot: Shot, caption: string): ABlock[] {
    for (const m of this.messages)
      if (m.role === 'user' && Array.isArray(m.content))
        m.content = m.content.filter((b) => b.type !== 'image');
    return [
      { type: 'text', text: caption },
      {
        type: 'image',
        source: { type: 'base64', media_type: 'image/jpeg', data: shot.data.toString('base64') },
      },
    ];
  }
  begin(prompt: string, shot: Shot, caption: string): void {
    this.display = [shot.width, shot.height];
    this.messages.push({
      role: 'user',
      content: [{ type: 'text', text: prompt }, ...this.image(shot, caption)],
    });
  }
  async send(signal: AbortSignal): Promise<ModelTurn> {
    const body = {
      model: this.o.model,
      max_tokens: this.o.maxOutputTokens,
      messages: this.messages,
      tools: this.tools(),
    };
    this.lastRequestBytes = Buffer.byteLength(json(body));
    const r = await this.client.beta.messages.create({ ...body, betas: [COMPUTER_BETA] }, { signal });
    let text = '';
    const calls: ToolCall[] = [];
    for (const b of r.content) {
      if (b.type === 'text') text += b.text;
      else if (b.type === 'tool_use') {
        const input = (b.input ?? {}) as Record<string, unknown>;
        if (b.name === 'computer')
          calls.push({ id: b.id, name: 'desktop_action', args: fromComputerAction(input), raw: json(input) });
        else calls.push({ id: b.id, name: b.name, args: input, raw: json(input) });
      }
    }
    this.messages.push({ role: 'assistant', content: r.content as unknown as ABlock[] });
    return { text, calls, usage: { input: r.usage.input_tokens, output: r.usage.output_tokens } };
  }
  reply(results: ToolReply[], shot: Shot | null, caption: string): void {
    const blocks: ABlock[] = results.map((r) => ({
      type: 'tool_result',
      tool_use_id: r.call.id,
      content: [{ type: 'text', text: json(r.output) }],
      ...(r.output.ok === false ? { is_error: true } : {}),
    }));
    if (shot) blocks.push(...this.image(shot, caption));
    this.messages.push({ role: 'user', content: blocks });
  }
}

export function makeProvider(api: Api, o: ProviderOptions): Provider {
  if (api === 'responses') return new ResponsesProvider(o);
  if (api === 'chat') return new ChatProvider(o);
  return new AnthropicProvider(o);
}

/** Transient transport errors worth a retry: connection trouble, 408/409/429, 5xx. */
export function transient(err: unknown): {
  retry: boolean;
  status: number | null;
  retryAfterMs: number | null;
} {
  const e = err as { status?: number; headers?: Headers | Record<string, string> | undefined; name?: string };
  if (err instanceof OpenAI.APIUserAbortError || err instanceof Anthropic.APIUserAbortError)
    return { retry: false, status: null, retryAfterMs: null };
  const conn = err instanceof OpenAI.APIConnectionError || err instanceof Anthropic.APIConnectionError;
  const status = typeof e.status === 'number' ? e.status : null;
  let retryAfterMs: number | null = null;
  const h = e.headers;
  const get = (k: string): string | null | undefined =>
    h
      ? typeof (h as Headers).get === 'function'
        ? (h as Headers).get(k)
        : (h as Record<string, string>)[k]
      : null;
  const ms = get('retry-after-ms');
  const s = get('retry-after');
  if (ms && Number.isFinite(Number(ms))) retryAfterMs = Number(ms);
  else if (s && Number.isFinite(Number(s))) retryAfterMs = Number(s) * 1000;
  else if (s) {
    const d = Date.parse(s);
    if (Number.isFinite(d)) retryAfterMs = Math.max(0, d - Date.now());
  }
  const retry =
    conn || status === 408 || status === 409 || status === 429 || (status !== null && status >= 500);
  return { retry, status, retryAfterMs };
}

/** Whether an error is the provider refusing the key/token (no retry: guidance instead). */
export function authError(err: unknown): boolean {
  const s = (err as { status?: number }).status;
  return s === 401 || s === 403;
}
