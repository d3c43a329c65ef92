import { NotificationType, RequestType } from 'vscode-jsonrpc';
import type { z } from 'zod';

/** Which side sends a message. */
export type Direction = 'host→supervisor' | 'supervisor→host' | 'worker→supervisor';

export interface RequestDef<P extends z.ZodType, R extends z.ZodType> {
  readonly method: string;
  readonly direction: Direction;
  readonly params: P;
  readonly result: R;
  readonly type: RequestType<z.input<P>, z.output<R>, void>;
}
export interface NotificationDef<P extends z.ZodType> {
  readonly method: string;
  readonly direction: Direction;
  readonly params: P;
  readonly type: NotificationType<z.input<P>>;
}

export function request<P extends z.ZodType, R extends z.ZodType>(
  method: string,
  direction: Direction,
  params: P,
  result: R,
): RequestDef<P, R> {
  return { method, direction, params, result, type: new RequestType(method) };
}

export function notification<P extends z.ZodType>(
  method: string,
  direction: Direction,
  params: P,
): NotificationDef<P> {
  return { method, direction, params, type: new NotificationType(method) };
}
