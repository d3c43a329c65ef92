// An import resolver (eslint-module-utils' interface v2) for eslint-plugin-boundaries that is Node's
// own: require.resolve from the importing file, so package "exports" (@runboard/supervisor/protocol →
// supervisor/src/protocol/index.ts) and the workspaces' symlinks resolve exactly as at run time.
// eslint-import-resolver-typescript would do the same, but its native resolver has no build for every
// platform in our registry, which breaks `npm ci` elsewhere.
'use strict';
const { builtinModules, createRequire } = require('node:module');

const builtins = new Set(builtinModules);

exports.interfaceVersion = 2;
exports.resolve = function resolve(source, file) {
  if (source.startsWith('node:') || builtins.has(source)) return { found: true, path: null };
  try {
    return { found: true, path: createRequire(file).resolve(source) };
  } catch {
    // ESM-only packages (no "require" export condition) and files that do not exist: left unresolved,
    // which the layer rules still judge by the specifier (external module, by name).
    return { found: false };
  }
};
