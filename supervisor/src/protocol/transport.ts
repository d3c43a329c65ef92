/**
 * Framing for every Runboard connection: `Content-Length` frames as in the LSP base protocol, read by
 * a reader that survives bad input. vscode-jsonrpc's stock reader buffers any announced length and
 * drops a frame it cannot parse without a word; this one
 *  - answers a frame over `maxMessageBytes` with MessageTooLarge and skips its body without buffering it,
 *  - answers a body that is not JSON with ParseError and goes on with the next frame,
 *  - answers JSON that is not a JSON-RPC message with InvalidRequest,
 *  - answers a header it cannot parse with ParseError and then closes (framing is lost).
 *
 * A message may carry bytes: a notification whose params hold a Buffer `bytes` travels as a frame with
 * a `Runboard-Message` header (the message without `bytes`, as JSON) and the bytes as its body, so
 * output crosses the socket as it is on disk instead of as a JSON string (no encoding, escaping or
 * UTF-8 decoding on either side). The reader puts the body back as `params.bytes` and delivers the
 * message in its place among the others. Only a peer that asked for them is sent such frames.
 */
import {
  AbstractMessageReader,
  AbstractMessageWriter,
  createMessageConnection,
  type DataCallback,
  type Disposable,
  type Message,
  type MessageConnection,
  type MessageWriter,
} from 'vscode-jsonrpc/node';
import { ErrorCodes, JsonRpcCodes } from './errors.ts';

export interface ByteSource {
  on(event: 'data', cb: (chunk: Buffer) => void): unknown;
  on(event: 'close' | 'end', cb: () => void): unknown;
  on(event: 'error', cb: (err: Error) => void): unknown;
}
export interface ByteSink {
  write(data: Buffer | string, cb?: (err?: Error | null) => void): boolean;
  on(event: 'error', cb: (err: Error) => void): unknown;
  on(event: 'close' | 'drain', cb: () => void): unknown;
  once(event: 'close' | 'drain', cb: () => void): unknown;
  off(event: 'close' | 'drain', cb: () => void): unknown;
  end(): unknown;
  readonly writableLength: number;
  readonly destroyed: boolean;
}

export interface ProtocolError {
  id: number | string | null;
  code: number;
  message: string;
  /** True when the stream can no longer be read (framing lost): the caller should close it. */
  fatal: boolean;
}

export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
const MAX_HEADER_BYTES = 8192;
const HEADER_END = Buffer.from('\r\n\r\n');
/** The header of a frame whose body is the `params.bytes` of the message the header holds. */
const BYTES_HEADER = 'runboard-message';

export class FramedMessageReader extends AbstractMessageReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private need = -1; // body length awaited; -1 while reading a header
  private bytesOf: string | undefined; // the frame being read carries bytes for this message (JSON)
  private skip = 0; // bytes of an oversize body still to discard
  private dead = false;

  constructor(
    private readonly source: ByteSource,
    private readonly onProtocolError: (e: ProtocolError) => void,
    private readonly maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES,
  ) {
    super();
  }

  listen(callback: DataCallback): Disposable {
    this.source.on('data', (chunk: Buffer) => this.onData(chunk, callback));
    this.source.on('error', (err: Error) => this.fireError(err));
    this.source.on('close', () => this.fireClose());
    return { dispose: () => undefined };
  }

  private onData(chunk: Buffer, callback: DataCallback): void {
    if (this.dead) return;
    if (this.skip > 0) {
      const n = Math.min(this.skip, chunk.length);
      this.skip -= n;
      chunk = chunk.subarray(n);
      if (chunk.length === 0) return;
    }
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.need < 0) {
        if (this.buffered === 0 || !this.readHeader()) return;
      } else {
        if (this.buffered < this.need) return;
        const body = this.take(this.need);
        this.need = -1;
        this.deliver(body, callback);
      }
      if (this.dead) return;
    }
  }

  private readHeader(): boolean {
    const head = this.peek(Math.min(this.buffered, MAX_HEADER_BYTES + 4));
    const end = head.indexOf(HEADER_END);
    if (end < 0) {
      if (this.buffered > MAX_HEADER_BYTES) this.fail('malformed frame: no header end within 8 KiB');
      return false;
    }
    const text = head.subarray(0, end).toString('ascii');
    this.take(end + 4);
    let length = -1;
    this.bytesOf = undefined;
    for (const line of text.split('\r\n')) {
      const m = /^([^:]+):\s*(.*)$/.exec(line);
      if (!m) return this.fail(`malformed frame header line: ${JSON.stringify(line.slice(0, 80))}`);
      const name = m[1]!.toLowerCase();
      if (name === 'content-length') length = /^\d{1,15}$/.test(m[2]!) ? Number(m[2]) : -1;
      else if (name === BYTES_HEADER) this.bytesOf = m[2]!;
    }
    if (length < 0) return this.fail('malformed frame: missing or invalid Content-Length');
    if (length > this.maxMessageBytes) {
      this.onProtocolError({
        id: null,
        code: ErrorCodes.MessageTooLarge,
        message: `message of ${length} bytes exceeds the limit of ${this.maxMessageBytes} bytes; it was skipped`,
        fatal: false,
      });
      const have = Math.min(this.buffered, length);
      this.take(have);
      this.skip = length - have;
      return this.buffered > 0;
    }
    this.need = length;
    return true;
  }

  private deliver(body: Buffer, callback: DataCallback): void {
    let msg: unknown;
    try {
      msg = JSON.parse(this.bytesOf ?? body.toString('utf8'));
      if (this.bytesOf !== undefined) {
        const params = (msg as { params?: unknown } | null)?.params;
        if (typeof params !== 'object' || params === null || Array.isArray(params))
          throw new Error('a message with bytes needs params that are an object');
        (params as { bytes?: Buffer }).bytes = body; // a view of buffers nobody writes to again
      }
    } catch (err) {
      this.onProtocolError({
        id: null,
        code: JsonRpcCodes.ParseError,
        message: `invalid JSON in message ${this.bytesOf !== undefined ? 'header' : 'body'}: ${(err as Error).message}`,
        fatal: false,
      });
      return;
    }
    if (
      typeof msg !== 'object' ||
      msg === null ||
      Array.isArray(msg) ||
      (msg as { jsonrpc?: unknown }).jsonrpc !== '2.0'
    ) {
      const id = (msg as { id?: unknown } | null)?.id;
      this.onProtocolError({
        id: typeof id === 'number' || typeof id === 'string' ? id : null,
        code: JsonRpcCodes.InvalidRequest,
        message: 'not a JSON-RPC 2.0 message (expected an object with "jsonrpc": "2.0")',
        fatal: false,
      });
      return;
    }
    callback(msg as Message);
  }

  private fail(message: string): false {
    this.dead = true;
    this.chunks = [];
    this.buffered = 0;
    this.onProtocolError({ id: null, code: JsonRpcCodes.ParseError, message, fatal: true });
    return false;
  }

  private peek(n: number): Buffer {
    if (this.chunks.length === 0) return Buffer.alloc(0);
    if (this.chunks.length > 1 && this.chunks[0]!.length < n) {
      const all = Buffer.concat(this.chunks);
      this.chunks = [all];
    }
    return this.chunks[0]!.subarray(0, n);
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.buffered = rest.length;
    return out;
  }
}

/** Above this many bytes queued in the socket, writers wait for it to drain. */
const WRITE_HIGH_WATER = 8 * 1024 * 1024;

/**
 * Writes frames without waiting for each one to reach the kernel (vscode-jsonrpc's writer does, which
 * makes a fast sender and its reader take turns instead of working at the same time). Order is kept
 * (one synchronous write per frame); `write` resolves at once while less than WRITE_HIGH_WATER is
 * queued, else on 'drain', so a slow reader still holds the sender back.
 */
export class FramedMessageWriter extends AbstractMessageWriter implements MessageWriter {
  private closed = false;

  constructor(private readonly sink: ByteSink) {
    super();
    sink.on('error', (err: Error) => this.fireError(err));
    sink.on('close', () => this.markClosed());
  }

  private markClosed(): void {
    if (this.closed) return;
    this.closed = true;
    this.fireClose();
  }

  write(msg: Message): Promise<void> {
    if (this.closed || this.sink.destroyed) {
      // Never a rejection: vscode-jsonrpc's sendRequest rethrows a failed write inside a promise executor,
      // an unhandled rejection that ends the process (a board's serve died on a cancel sent just as its
      // supervisor was killed). The message is dropped; the connection hears of the close now if the
      // socket's own 'close' is still to come, and connect() disposes it then, which rejects every
      // request waiting for a reply.
      this.markClosed();
      return Promise.resolve();
    }
    const bytes = bytesOf(msg);
    let body: Buffer;
    let head: string;
    try {
      if (bytes) {
        const { bytes: _, ...params } = (msg as unknown as { params: { bytes: Buffer } }).params;
        head = `Content-Length: ${bytes.length}\r\nRunboard-Message: ${asciiJson({ ...msg, params })}\r\n\r\n`;
        body = bytes;
      } else {
        body = Buffer.from(JSON.stringify(msg), 'utf8');
        head = `Content-Length: ${body.length}\r\n\r\n`;
      }
    } catch (err) {
      this.fireError(err, msg);
      return Promise.reject(err);
    }
    this.sink.write(head); // header and body in one tick: nothing between them
    this.sink.write(body);
    if (this.sink.writableLength < WRITE_HIGH_WATER) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.sink.off('drain', done);
        this.sink.off('close', done);
        resolve();
      };
      this.sink.once('drain', done);
      this.sink.once('close', done);
    });
  }

  end(): void {
    this.sink.end();
  }
}

/** JSON with every non-ASCII character escaped: frame headers are ASCII. */
function asciiJson(v: unknown): string {
  return JSON.stringify(v).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** The Buffer `params.bytes` of a message, when it has one (it is then sent as a bytes frame). */
function bytesOf(msg: Message): Buffer | undefined {
  const params = (msg as { params?: unknown }).params;
  if (typeof params !== 'object' || params === null) return undefined;
  const bytes = (params as { bytes?: unknown }).bytes;
  return Buffer.isBuffer(bytes) ? bytes : undefined;
}

export interface ConnectionOptions {
  maxMessageBytes?: number;
  /** Called for every protocol error (after the error response was sent). */
  onProtocolError?: (e: ProtocolError) => void;
  /** Called when the stream must be closed (framing lost). */
  close?: () => void;
}

/** A JSON-RPC connection over a byte stream pair, with the robust reader above. Not yet listening. */
export function connect(source: ByteSource, sink: ByteSink, opts: ConnectionOptions = {}): MessageConnection {
  const writer = new FramedMessageWriter(sink);
  const reader = new FramedMessageReader(
    source,
    (e) => {
      void writer
        .write({
          jsonrpc: '2.0',
          id: e.id,
          error: { code: e.code, message: e.message },
        } as unknown as Message)
        .catch(() => undefined)
        .finally(() => {
          opts.onProtocolError?.(e);
          if (e.fatal) opts.close?.();
        });
    },
    opts.maxMessageBytes,
  );
  const conn = createMessageConnection(reader, writer);
  // A closed connection gets no more replies: those still awaited are rejected (dispose), not left pending.
  conn.onClose(() => conn.dispose());
  return conn;
}
