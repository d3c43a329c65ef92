/**
 * The model stack's entry for a conversation with tools (the computer-use loop, replay's
 * predict_action): OpenAI Responses, Chat Completions or Anthropic Messages, each in its own file
 * beside its one-shot call. One-shot requests are client.ts.
 */
import { ChatProvider } from './chat.ts';
import { MessagesProvider } from './messages.ts';
import { ResponsesProvider } from './responses.ts';
import type { Api, Provider, ProviderOptions } from './types.ts';

export type * from './types.ts';

/** The wire format of a conversation with tools: the flow's computerUse.api, else the provider's own. */
export function apiOf(provider: string, api: Api | undefined): Api {
  return api ?? (provider === 'anthropic' ? 'messages' : provider === 'openai' ? 'responses' : 'chat');
}

/** A conversation with tools in the given wire format. */
export function makeProvider(api: Api, o: ProviderOptions): Provider {
  if (api === 'responses') return new ResponsesProvider(o);
  if (api === 'chat') return new ChatProvider(o);
  return new MessagesProvider(o);
}
