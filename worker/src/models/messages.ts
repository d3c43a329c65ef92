/**
 * Anthropic Messages: a one-shot call with text and images (callMessages) and a conversation with tools
 * (MessagesProvider: its computer-use tool stands for desktop_action, the other tools are custom tools),
 * sent whole every turn with only the latest screenshot left in it.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { anthropicSdk, json } from './sdk.ts';
import type {
  CallInput,
  CallOptions,
  CallResult,
  ModelTurn,
  Picture,
  Provider,
  ProviderOptions,
  ToolCall,
  ToolReply,
} from './types.ts';

export async function callMessages(sdk: Anthropic, input: CallInput, o: CallOptions): Promise<CallResult> {
  if (input.video) throw new Error('the Messages API takes no video: send frames of it');
  const content: Anthropic.ContentBlockParam[] = [];
  if (input.prompt) content.push({ type: 'text', text: input.prompt });
  for (const im of input.images ?? []) {
    if (im.caption) content.push({ type: 'text', text: im.caption });
    content.push({
      type: 'image',
      source: { type: 'base64', media_type: im.mime, data: im.data.toString('base64') },
    });
  }
  if (input.after) content.push({ type: 'text', text: input.after });
  const body = {
    model: o.model,
    max_tokens: o.maxOutputTokens,
    messages: [{ role: 'user' as const, content }],
  };
  const requestBytes = Buffer.byteLength(JSON.stringify(body));
  const r = await sdk.messages.create(body, { signal: o.signal });
  const text = r.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
  return { text, usage: { input: r.usage.input_tokens, output: r.usage.output_tokens }, requestBytes };
}

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

export class MessagesProvider implements Provider {
  readonly api = 'messages' as const;
  lastRequestBytes = 0;
  private readonly client: Anthropic;
  private readonly messages: AMsg[] = [];
  private display: [number, number] = [1024, 768];
  constructor(private readonly o: ProviderOptions) {
    this.client = anthropicSdk(o, o.timeoutMs);
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
  private image(shot: Picture, caption: string): ABlock[] {
    for (const m of this.messages)
      if (m.role === 'user' && Array.isArray(m.content))
        m.content = m.content.filter((b) => b.type !== 'image');
    return [
      { type: 'text', text: caption },
      {
        type: 'image',
        source: { type: 'base64', media_type: shot.mime, data: shot.data.toString('base64') },
      },
    ];
  }
  begin(prompt: string, shot: Picture, caption: string): void {
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
  reply(results: ToolReply[], shot: Picture | null, caption: string): void {
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
