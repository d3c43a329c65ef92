/**
 * Receiving side validation (as Playwright does on both ends): a handler never sees a payload its
 * schema did not accept, and a caller never trusts a result its schema did not accept.
 */
import { type MessageConnection, ResponseError } from 'vscode-jsonrpc/node';
import type * as z from 'zod/mini';
import type { NotificationDef, RequestDef } from './define.ts';
import { JsonRpcCodes } from './errors.ts';

function describe(err: z.core.$ZodError): string {
  return err.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join('.') : '(params)'}: ${i.message}`)
    .join('; ');
}

/** Serve a request: params validated, errors thrown as ResponseError pass through, others become InternalError. */
export function handle<P extends z.ZodMiniType, R extends z.ZodMiniType>(
  connection: MessageConnection,
  def: RequestDef<P, R>,
  handler: (params: z.output<P>) => Promise<z.input<R>> | z.input<R>,
): void {
  connection.onRequest(def.type, async (raw: unknown) => {
    const parsed = def.params.safeParse(raw ?? {});
    if (!parsed.success) {
      throw new ResponseError(
        JsonRpcCodes.InvalidParams,
        `invalid params for ${def.method}: ${describe(parsed.error)}`,
      );
    }
    try {
      return (await handler(parsed.data)) as z.output<R>;
    } catch (err) {
      if (err instanceof ResponseError) throw err;
      throw new ResponseError(
        JsonRpcCodes.InternalError,
        `${def.method} failed: ${(err as Error).message ?? String(err)}`,
      );
    }
  });
}

/** Receive a notification: an invalid one is reported to `onInvalid` and dropped. */
export function on<P extends z.ZodMiniType>(
  connection: MessageConnection,
  def: NotificationDef<P>,
  handler: (params: z.output<P>) => void,
  onInvalid: (message: string) => void = () => undefined,
): void {
  connection.onNotification(def.type, (raw: unknown) => {
    const parsed = def.params.safeParse(raw ?? {});
    if (parsed.success) handler(parsed.data);
    else onInvalid(`invalid ${def.method} notification: ${describe(parsed.error)}`);
  });
}

/** Send a request and validate the result. */
export async function call<P extends z.ZodMiniType, R extends z.ZodMiniType>(
  connection: MessageConnection,
  def: RequestDef<P, R>,
  params: z.input<P>,
): Promise<z.output<R>> {
  const raw: unknown = await connection.sendRequest(def.type, params);
  const parsed = def.result.safeParse(raw);
  if (!parsed.success) throw new Error(`invalid result from ${def.method}: ${describe(parsed.error)}`);
  return parsed.data;
}

export function notify<P extends z.ZodMiniType>(
  connection: MessageConnection,
  def: NotificationDef<P>,
  params: z.input<P>,
): Promise<void> {
  return connection.sendNotification(def.type, params);
}
