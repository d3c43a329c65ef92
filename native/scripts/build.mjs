// Builds the addon and the jail with node-gyp against the headers of the Node that runs this script.
// node-gyp would otherwise try to download headers, which fails on machines without internet.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const nodeDir = path.resolve(path.dirname(process.execPath), '..');
const args = ['rebuild', '-j', '2', '--loglevel=warn'];
if (existsSync(path.join(nodeDir, 'include', 'node', 'node.h'))) args.push(`--nodedir=${nodeDir}`);
let gyp;
try {
  gyp = require.resolve('node-gyp/bin/node-gyp.js');
} catch {
  // Before the first install has finished: npm ships a node-gyp of its own.
  gyp = path.join(nodeDir, 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
}
const r = spawnSync(process.execPath, [gyp, ...args], {
  cwd: path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '..'),
  stdio: ['ignore', 'inherit', 'inherit'],
});
if (r.status !== 0) {
  console.error(
    'runboard: the native build failed. It needs g++, make, python3 and the Node headers ' +
      `(looked in ${nodeDir}/include/node). Run scripts/setup.sh, which installs them.`,
  );
  process.exit(r.status ?? 1);
}

// The libraries the addon opens at their first use (src/linux/lazy_lib.h, gio_lazy.cc) must not be
// linked after all: a call to one of their functions that is not in gio_lazy.cc (or not looked up
// through lazy_lib.h) would be an undefined symbol, and the process would die at that call.
if (process.platform === 'linux') {
  const addon = path.resolve(
    import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname),
    '..',
    'build',
    'Release',
    'runboard_native.node',
  );
  const nm = spawnSync('nm', ['-D', '--undefined-only', addon], { encoding: 'utf8' });
  const lazy = (nm.stdout ?? '')
    .split('\n')
    .map((l) => l.trim().split(/\s+/).pop() ?? '')
    .filter((s) => /^(g_|atspi_|Xft|Fc|png_|jpeg_)/.test(s));
  if (nm.status === 0 && lazy.length > 0) {
    console.error(
      `runboard: the addon calls functions of a lazily opened library directly: ${lazy.join(', ')}. ` +
        'Add them to src/linux/gio_lazy.cc (GLib/GIO) or look them up through src/linux/lazy_lib.h.',
    );
    process.exit(1);
  }
}
