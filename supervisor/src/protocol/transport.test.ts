// The framing reader over an in-memory stream pair: what it does with good, split, bad and huge frames.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { connect, FramedMessageReader, FramedMessageWriter, type ProtocolError } from './transport.ts';
import { JsonRpcCodes } from './errors.ts';

function setup(max = 1024) {
  const src = new PassThrough();
  const messages: unknown[] = [];
  const errors: ProtocolError[] = [];
  const reader = new FramedMessageReader(src, (e) => errors.push(e), max);
  reader.listen((m) => messages.push(m));
  const frame = (body: string): Buffer =>
    Buffer.from(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  return { src, messages, errors, frame };
}
const msg = (id: number): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'x' });

describe('FramedMessageReader', () => {
  it('reads several frames from one chunk and one frame split byte by byte', () => {
    const { src, messages, frame } = setup();
    src.write(Buffer.concat([frame(msg(1)), frame(msg(2))]));
    const third = frame(msg(3));
    for (const b of third) src.write(Buffer.from([b]));
    expect(messages.map((m) => (m as { id: number }).id)).toEqual([1, 2, 3]);
  });

  it('handles multi-byte UTF-8 split across chunks', () => {
    const { src, messages, frame } = setup();
    const f = frame(JSON.stringify({ jsonrpc: '2.0', method: 'x', params: { t: 'héllo ✓ 世界' } }));
    src.write(f.subarray(0, f.length - 8));
    src.write(f.subarray(f.length - 8));
    expect(messages).toEqual([{ jsonrpc: '2.0', method: 'x', params: { t: 'héllo ✓ 世界' } }]);
  });

  it('answers invalid JSON with a parse error and reads the next frame', () => {
    const { src, messages, errors, frame } = setup();
    src.write(Buffer.concat([frame('{nope'), frame(msg(4))]));
    expect(errors).toMatchObject([{ id: null, code: JsonRpcCodes.ParseError, fatal: false }]);
    expect(messages).toHaveLength(1);
  });

  it('answers a non-JSON-RPC message with InvalidRequest carrying its id', () => {
    const { src, errors, frame } = setup();
    src.write(frame('{"id": 5, "method": "x"}'));
    expect(errors).toMatchObject([{ id: 5, code: JsonRpcCodes.InvalidRequest }]);
  });

  it('skips an oversize frame without buffering it, then goes on', () => {
    const { src, messages, errors, frame } = setup(100);
    src.write(Buffer.from('Content-Length: 5000\r\n\r\n'));
    for (let i = 0; i < 5; i++) src.write(Buffer.alloc(1000, 0x41));
    src.write(frame(msg(6)));
    expect(errors).toMatchObject([{ code: 1030, fatal: false }]);
    expect(errors[0]!.message).toMatch(/5000 bytes exceeds the limit of 100/);
    expect(messages).toEqual([JSON.parse(msg(6))]);
  });

  it('gives up (fatal) on a header without Content-Length, and on endless header bytes', () => {
    const a = setup();
    a.src.write('X-Other: 1\r\n\r\n{}');
    expect(a.errors).toMatchObject([{ code: JsonRpcCodes.ParseError, fatal: true }]);
    a.src.write(a.frame(msg(1)));
    expect(a.messages).toEqual([]); // framing is lost: nothing more is read
    const b = setup();
    b.src.write(Buffer.alloc(9000, 0x41));
    expect(b.errors).toMatchObject([{ fatal: true }]);
  });
});

describe('FramedMessageWriter', () => {
  it('writes frames in order that the reader reads back, without waiting for each to be flushed', async () => {
    const pipe = new PassThrough();
    const writer = new FramedMessageWriter(pipe);
    const got: unknown[] = [];
    new FramedMessageReader(pipe, () => undefined, 1 << 24).listen((m) => got.push(m));
    const big = 'x'.repeat(3 * 1024 * 1024);
    await Promise.all(
      [1, 2, 3].map((id) =>
        writer.write({ jsonrpc: '2.0', id, method: 'm', params: { big, t: 'é✓' } } as never),
      ),
    );
    await new Promise((r) => setImmediate(r));
    expect(got.map((m) => (m as { id: number }).id)).toEqual([1, 2, 3]);
    expect((got[2] as { params: { big: string; t: string } }).params.t).toBe('é✓');
  });
});

describe('bytes frames', () => {
  it('a message with a Buffer `bytes` crosses as raw bytes, in its place among JSON frames', async () => {
    const pipe = new PassThrough();
    const writer = new FramedMessageWriter(pipe);
    const raw: Buffer[] = [];
    pipe.on('data', (c: Buffer) => raw.push(c));
    const got: unknown[] = [];
    new FramedMessageReader(pipe, () => undefined, 1 << 24).listen((m) => got.push(m));
    const bytes = Buffer.from([0xff, 0x00, 0x0a, 0xc3, 0x28, 0x41]); // not UTF-8: kept as it is
    await writer.write({ jsonrpc: '2.0', method: 'a', params: { n: 1 } } as never);
    await writer.write({ jsonrpc: '2.0', method: 'b', params: { who: 'é✓', bytes } } as never);
    await writer.write({ jsonrpc: '2.0', method: 'c', params: { n: 3 } } as never);
    await new Promise((r) => setImmediate(r));
    expect(got.map((m) => (m as { method: string }).method)).toEqual(['a', 'b', 'c']);
    const params = (got[1] as { params: { who: string; bytes: Buffer } }).params;
    expect(params.who).toBe('é✓');
    expect(Buffer.compare(params.bytes, bytes)).toBe(0);
    // the body on the wire is the bytes themselves (no JSON, no base64); the header is plain ASCII
    const wire = Buffer.concat(raw);
    expect(wire.includes(Buffer.concat([Buffer.from('\r\n\r\n'), bytes]))).toBe(true);
    expect(wire.toString('latin1')).toContain(
      'Runboard-Message: {"jsonrpc":"2.0","method":"b","params":{"who":"\\u00e9\\u2713"}}',
    );
  });

  it('answers a bytes frame whose header is not JSON with a parse error and reads on', () => {
    const { src, messages, errors, frame } = setup();
    src.write(Buffer.from('Content-Length: 2\r\nRunboard-Message: {nope\r\n\r\nhi'));
    src.write(frame(msg(7)));
    expect(errors).toMatchObject([{ code: JsonRpcCodes.ParseError, fatal: false }]);
    expect(errors[0]!.message).toMatch(/header/);
    expect(messages).toEqual([JSON.parse(msg(7))]);
  });
});

describe('connect', () => {
  it('a request sent on a socket destroyed before its close was seen fails the call, and nothing else', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (r: unknown): void => void unhandled.push(r);
    process.on('unhandledRejection', onUnhandled);
    try {
      const src = new PassThrough();
      const sink = new PassThrough();
      const conn = connect(src, sink);
      conn.listen();
      sink.destroy(); // 'close' comes on a later tick: the write below happens before it
      await expect(conn.sendRequest('x/y', {})).rejects.toThrow(/disposed|closed/i);
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]); // vscode-jsonrpc rethrows a failed write: that would end the process
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
