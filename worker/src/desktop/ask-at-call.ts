/**
 * Computer-use and replay ask at the tool call (issue 28): a document tool's path outside the run's
 * scope (read_document, analyze_media, export_document) is asked on the run's ask socket before the
 * act, the same socket and JSON lines the agent CLIs' hooks use (worker/src/main.ts serveAsks), and the
 * tool waits for the person. Allowed: the run has the folder now (the jail gave it to this run), the
 * scope gains it and the call is made again. Denied (or no answer in time): the model gets the denial
 * as the tool's result and the run goes on. No ask socket: the run stops and asks, as before.
 */
import net from 'node:net';
import path from 'node:path';
import { RunEnv } from '@runboard/supervisor/protocol';
import type { DocumentScope } from '../tools/documents/scope.ts';

export interface AskAnswer {
  decision: 'allow' | 'deny';
  message: string;
  /** Where the run finds the folder when its path is a link to it (protocol WorkerAsk). */
  at?: string;
}

/** Asks on the run's ask socket; null when the run has none (or it cannot be reached). */
export function askAtCall(
  env: NodeJS.ProcessEnv,
  kind: 'read' | 'write',
  p: string,
  tool: string,
): Promise<AskAnswer | null> {
  const at = env[RunEnv.askSocket];
  if (!at) return Promise.resolve(null);
  return new Promise((resolve) => {
    let buf = '';
    let done = false;
    const finish = (a: AskAnswer | null): void => {
      if (done) return;
      done = true;
      s.destroy();
      resolve(a);
    };
    const s = net.connect(at);
    s.setEncoding('utf8');
    s.on('error', () => finish(null));
    s.on('close', () => finish(null));
    s.on('data', (chunk: string) => {
      buf += chunk;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      try {
        const a = JSON.parse(buf.slice(0, nl)) as AskAnswer;
        finish(a.decision === 'allow' || a.decision === 'deny' ? a : null);
      } catch {
        finish(null);
      }
    });
    s.write(JSON.stringify({ kind, path: p, tool }) + '\n');
  });
}

/**
 * A document tool's path outside the run's scope, asked before the act: `message` is the tool's
 * refusal ("<path> is outside the workspace (…)"). export_document's output is a write, every other
 * path a read. Returns "again" when the person allowed it (the scope gains the file's folder: call the
 * tool again), the denial in words for the model, or null when nothing could be asked (no ask socket).
 */
export async function askOutside(
  ctx: { env: NodeJS.ProcessEnv; workspace: string; documents: DocumentScope | null },
  tool: string,
  args: Record<string, unknown>,
  message: string,
): Promise<'again' | string | null> {
  const i = message.indexOf(' is outside the workspace (');
  if (i <= 0 || !ctx.documents) return null;
  const p = message.slice(0, i).split('\n').pop()!;
  const abs = path.resolve(ctx.workspace, p);
  const kind = tool === 'export_document' && args.md_path !== p ? 'write' : 'read';
  const answer = await askAtCall(ctx.env, kind, abs, tool);
  if (!answer) return null;
  if (answer.decision === 'deny') return answer.message;
  ctx.documents = { ...ctx.documents, allow: [...(ctx.documents.allow ?? []), path.dirname(abs)] };
  return 'again';
}
