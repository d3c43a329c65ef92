/**
 * A fleet's Redis URL as ioredis/BullMQ options. Apart from job.ts so that the supervisor's start
 * (fleet/config.ts, backend.ts) checks a URL without loading the job's schemas and inputs, which only a
 * fleet's gateway and host need (they are in the chunks loaded when a fleet is used).
 */

/** Connection options for ioredis/BullMQ from a redis:// or rediss:// URL, with a clear error. */
export function redisOptions(
  url: string,
  /** The password kept apart from the URL (a stored secret, a file, stdin): it wins over the URL's. */
  password?: string,
): {
  host: string;
  port: number;
  username?: string;
  password?: string;
  db?: number;
  tls?: object;
  maxRetriesPerRequest: null;
} {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`redis.url "${url}" is not a URL; write it as redis://host:6379`);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
    throw new Error(`redis.url "${url}" must start with redis:// or rediss:// (TLS)`);
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : undefined;
  if (db !== undefined && !Number.isInteger(db))
    throw new Error(`redis.url "${url}": the database after the / must be a number`);
  return {
    host: u.hostname || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(password !== undefined
      ? { password }
      : u.password
        ? { password: decodeURIComponent(u.password) }
        : {}),
    ...(db !== undefined ? { db } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
    // BullMQ's workers block on Redis; they must wait through a Redis restart rather than fail.
    maxRetriesPerRequest: null,
  };
}
