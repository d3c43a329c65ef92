/**
 * Runboard's protocol: the one module host, supervisor and worker share. It depends on nothing but
 * vscode-jsonrpc and zod. See docs/protocol.md.
 */
export * from './data.ts';
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
