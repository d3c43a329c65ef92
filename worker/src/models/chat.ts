/**
 * Chat Completions (any OpenAI-compatible server): a one-shot call with text and images (callChat)
 * and a conversation with function tools (ChatProvider), sent whole every turn with only the latest
 * screenshot left in it.
 */
import type OpenAI from 'openai';
import { dataUrl, json, openaiSdk, parseArgs } from './sdk.ts';
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

export async function callChat(sdk: OpenAI, input: CallInput, o: CallOptions): Promise<CallResult> {
  const content: OpenAI.Chat.ChatCompletionContentPart[] = [];
  if (input.prompt) content.push({ type: 'text', text: input.prompt });
  // GLM's own content part, which the SDK's types do not know
  if (input.video)
    content.push({
      type: 'video_url',
      video_url: { url: dataUrl(input.video) },
    } as unknown as OpenAI.Chat.ChatCompletionContentPart);
  for (const im of input.images ?? []) {
    if (im.caption) content.push({ type: 'text', text: im.caption });
    content.push({ type: 'image_url', image_url: { url: dataUrl(im) } });
  }
  if (input.after) content.push({ type: 'text', text: input.after });
  const body = { model: o.model, messages: [{ role: 'user' as const, content }] };
  const requestBytes = Buffer.byteLength(JSON.stringify(body));
  const r = await sdk.chat.completions.create(
    { ...body, max_completion_tokens: o.maxOutputTokens },
    { signal: o.signal },
  );
  return {
    text: r.choices[0]?.message?.content ?? '',
    usage: { input: r.usage?.prompt_tokens ?? 0, output: r.usage?.completion_tokens ?? 0 },
    requestBytes,
  };
}

type CMsg = OpenAI.Chat.ChatCompletionMessageParam;

export class ChatProvider implements Provider {
  readonly api = 'chat' as const;
  lastRequestBytes = 0;
  private readonly client: OpenAI;
  private readonly messages: CMsg[] = [];
  private readonly tools: OpenAI.Chat.ChatCompletionTool[];
  constructor(private readonly o: ProviderOptions) {
    this.client = openaiSdk(o, o.timeoutMs);
    this.tools = o.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.schema },
    }));
  }
  private image(shot: Picture, caption: string): CMsg {
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
  begin(prompt: string, shot: Picture, caption: string): void {
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
  reply(results: ToolReply[], shot: Picture | null, caption: string): void {
    for (const r of results)
      this.messages.push({ role: 'tool', tool_call_id: r.call.id, content: json(r.output) });
    if (shot) this.messages.push(this.image(shot, caption));
  }
}
