import { NotificationType, RequestType } from 'vscode-jsonrpc';
import type * as z from 'zod/mini';

/** Which side sends a message. */
export type Direction = 'host→supervisor' | 'supervisor→host' | 'worker→supervisor';

export interface RequestDef<P extends z.ZodMiniType, R extends z.ZodMiniType> {
  readonly method: string;
  readonly direction: Direction;
  readonly params: P;
  readonly result: R;
  readonly type: RequestType<z.input<P>, z.output<R>, void>;
}
export interface NotificationDef<P extends z.ZodMiniType> {
  readonly method: string;
  readonly direction: Direction;
  readonly params: P;
  readonly type: NotificationType<z.input<P>>;
}

export function request<P extends z.ZodMiniType, R extends z.ZodMiniType>(
  method: string,
  direction: Direction,
  params: P,
  result: R,
): RequestDef<P, R> {
  return { method, direction, params, result, type: new RequestType(method) };
}

export function notification<P extends z.ZodMiniType>(
  method: string,
  direction: Direction,
  params: P,
): NotificationDef<P> {
  return { method, direction, params, type: new NotificationType(method) };
}
