// The only file that touches the untyped binding. Everything else imports the typed facade.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder that holds the built addon and the jail, found from this file or the bundle that contains it. */
export function nativeBuildDir(): string {
  const fromEnv = process.env.RUNBOARD_NATIVE_DIR;
  if (fromEnv) return fromEnv;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, 'native', 'build', 'Release');
    if (existsSync(candidate)) return candidate;
    const inside = path.join(dir, 'build', 'Release');
    if (path.basename(dir) === 'native' && existsSync(inside)) return inside;
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(
    'runboard: the native addon is not built (no native/build/Release). Run scripts/setup.sh, which builds it.',
  );
}

interface RawBinding {
  sandboxSupport(): { landlockAbi: number; reason: string };
  peerCredentials(fd: number): { pid: number; uid: number; gid: number };
}

let cached: RawBinding | undefined;
export function binding(): RawBinding {
  if (!cached) {
    const require = createRequire(import.meta.url);
    cached = require(path.join(nativeBuildDir(), 'runboard_native.node')) as RawBinding;
  }
  return cached;
}
