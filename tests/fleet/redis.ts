/**
 * A private redis-server for a test file: loopback, a free port, its data in the test's own folder, and
 * a password (as docs/deployment.md asks of a fleet's Redis): every client authenticates through the URL.
 * The password is given on the command line of a server that only lives for the test (a real
 * deployment keeps it in the server's config file, docs/deployment.md).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import net from 'node:net';
import { Redis } from 'ioredis';
import { waitUntil } from '../helpers/harness.ts';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export class RedisServer {
  private proc: ChildProcess | undefined;
  /** The `default` user's password (requirepass). */
  readonly password = randomBytes(18).toString('hex');
  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  get url(): string {
    return `redis://:${this.password}@127.0.0.1:${this.port}`;
  }

  static async start(dir: string): Promise<RedisServer> {
    mkdirSync(dir, { recursive: true });
    const r = new RedisServer(await freePort(), dir);
    await r.restart();
    return r;
  }

  /** (Re)starts the server on the same port and data (append-only file: jobs survive a restart). */
  async restart(): Promise<void> {
    this.proc = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--dir',
        this.dir,
        '--appendonly',
        'yes',
        '--save',
        '',
        '--requirepass',
        this.password,
      ],
      { stdio: 'ignore' },
    );
    await waitUntil(
      'redis-server answering',
      async () => {
        const c = new Redis({
          port: this.port,
          password: this.password,
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        });
        c.on('error', () => undefined);
        try {
          await c.connect();
          return (await c.ping()) === 'PONG';
        } catch {
          return false;
        } finally {
          c.disconnect();
        }
      },
      10_000,
    );
  }

  /**
   * Redis down for longer than a lease (a user's restart, slow under load): stopped, kept down until
   * every job lock it held has run out and `leaseMs` passed (the scenario, not a wait for an outcome),
   * then started again on the same data. The locks are gone when it is back (the append-only file keeps
   * their expiry as an instant).
   */
  async outage(leaseMs: number): Promise<void> {
    const c = new Redis({ port: this.port, password: this.password });
    let until = Date.now() + leaseMs;
    try {
      for (const key of await c.keys('*:lock')) {
        const ttl = await c.pttl(key);
        if (ttl > 0) until = Math.max(until, Date.now() + ttl);
      }
    } finally {
      c.disconnect();
    }
    await this.stop();
    await waitUntil('every lock Redis held has run out', () => Date.now() > until, 60_000);
    await this.restart();
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    await exited;
  }
}

/** A TCP relay to Redis whose link the test can cut (a host losing its network) and restore. */
export class CuttableLink {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  private constructor(
    private readonly target: number,
    private readonly password: string,
  ) {}

  /** A link to the Redis at `target` (a RedisServer: its port and password). */
  static async open(target: { port: number; password: string }): Promise<CuttableLink> {
    const l = new CuttableLink(target.port, target.password);
    l.port = await freePort();
    await l.restore();
    return l;
  }

  get url(): string {
    return `redis://:${this.password}@127.0.0.1:${this.port}`;
  }

  restore(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    return new Promise((r) => this.server!.listen(this.port, '127.0.0.1', () => r()));
  }

  /** Every connection through the link drops, and new ones are refused. */
  async cut(): Promise<void> {
    const closed = new Promise((r) => this.server?.close(r));
    for (const s of this.sockets) s.destroy();
    await closed;
  }
}
