/**
 * OpenAI Responses: a one-shot call with text and images (callResponses) and a conversation with
 * function tools (ResponsesProvider). Stateless: `store: false`, the conversation sent whole every turn,
 * the text history kept and only the latest screenshot left in it.
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

export async function callResponses(sdk: OpenAI, input: CallInput, o: CallOptions): Promise<CallResult> {
  const content: OpenAI.Responses.ResponseInputContent[] = [{ type: 'input_text', text: input.prompt }];
  for (const im of input.images ?? []) {
    if (im.caption) content.push({ type: 'input_text', text: im.caption });
    content.push({ type: 'input_image', image_url: dataUrl(im), detail: 'auto' });
  }
  if (input.after) content.push({ type: 'input_text', text: input.after });
  const body = { model: o.model, input: [{ role: 'user' as const, content }], store: false };
  const requestBytes = Buffer.byteLength(JSON.stringify(body));
  const r = await sdk.responses.create(
    { ...body, max_output_tokens: o.maxOutputTokens },
    { signal: o.signal },
  );
  return {
    text: r.output_text ?? '',
    usage: { input: r.usage?.input_tokens ?? 0, output: r.usage?.output_tokens ?? 0 },
    requestBytes,
  };
}

type RInput = OpenAI.Responses.ResponseInputItem;

export class ResponsesProvider implements Provider {
  readonly api = 'responses' as const;
  lastRequestBytes = 0;
  private readonly client: OpenAI;
  private readonly input: RInput[] = [];
  private readonly tools: OpenAI.Responses.FunctionTool[];
  constructor(private readonly o: ProviderOptions) {
    this.client = openaiSdk(o, o.timeoutMs);
    this.tools = o.tools.map((t) => ({
      type: 'function',
      name: t.name,
      description: t.description,
      parameters: t.schema,
      strict: false,
    }));
  }
  private image(shot: Picture, caption: string): RInput {
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
  begin(prompt: string, shot: Picture, caption: string): void {
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
  reply(results: ToolReply[], shot: Picture | null, caption: string): void {
    for (const r of results)
      this.input.push({ type: 'function_call_output', call_id: r.call.id, output: json(r.output) });
    if (shot) this.input.push(this.image(shot, caption));
  }
}
