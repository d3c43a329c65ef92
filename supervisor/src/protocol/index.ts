/**
 * Runboard's protocol: the one module host, supervisor and worker share. It depends on nothing but
 * vscode-jsonrpc and zod. See docs/protocol.md.
 */
export * from './errors.ts';
export * from './schemas.ts';
export * from './messages.ts';
export * from './run-state.ts';
export * from './run-env.ts';
export * from './jail.ts';
export * from './refusals.ts';
export * from './cu-events.ts';
export {
  connect,
  FramedMessageReader,
  DEFAULT_MAX_MESSAGE_BYTES,
  type ProtocolError,
  type ByteSink,
  type ByteSource,
} from './transport.ts';
export { handle, on, call, notify } from './validate.ts';
export { ResponseError, type MessageConnection } from 'vscode-jsonrpc/node';
