// One lint setup for the whole repo. The layering of shared/DESIGN.md is enforced here, mechanically,
// by eslint-plugin-boundaries (see `layers` below), on static imports, re-exports, dynamic import(),
// require() and createRequire(...)(...) alike; scripts/check-boundaries.mjs lints probe imports that
// must be refused, so a rule that stops working fails the lint step.
//  - native imports nothing of ours but the recording format it writes (@runboard/project/recording);
//    nobody imports native/src internals, only @runboard/native (and its /regular-file, /media-input);
//  - the protocol imports nothing but vscode-jsonrpc and zod;
//  - the project model (packages/project, @runboard/project: cards, config, schedules, flow-spec, the
//    recording format) is pure: of ours only the protocol's data (types, schemas; not its transport) and
//    native's regular-file reader, of npm only yaml, zod and croner; host and supervisor import it;
//  - supervisor/src/common (paths, grants: shared with the host) never imports supervisor/src/node;
//  - worker never imports host, of the supervisor only its protocol entry point, and of the project
//    model only the recording format;
//  - in the worker, each runner room (worker/src/runners/<name>/) imports the desktop
//    (worker/src/desktop) and the model stack (worker/src/models) but no other runner room; the model
//    stack imports no desktop (neither worker/src/desktop nor native), no runner; nothing else imports a
//    runner room;
//  - host never imports worker, and of the supervisor only its public entry points (protocol, paths, grants,
//    git, regular-file, ledger, run-output, secrets, gc);
//  - host core never imports the renderer, the shells (cli, server, electron) or electron;
//  - the renderer (host/src/renderer, untrusted) imports no Node, no host core, and of the supervisor
//    and native only types; host/src/shared holds types and pure code both sides may import.
import js from '@eslint/js';
import path from 'node:path';
import boundaries from 'eslint-plugin-boundaries';
import tseslint from 'typescript-eslint';

/** The layers, by folder (paths from the repo root). Files outside them (tests, bench, scripts) are free. */
const layers = [
  { type: 'protocol', pattern: 'supervisor/src/protocol' },
  { type: 'supervisor-common', pattern: 'supervisor/src/common' },
  { type: 'project', pattern: 'packages/project/src' },
  { type: 'supervisor', pattern: 'supervisor/src/node' },
  // the worker's rooms before the worker as a whole (the first pattern that matches a file names its layer)
  { type: 'worker-desktop', pattern: 'worker/src/desktop' },
  { type: 'worker-models', pattern: 'worker/src/models' },
  { type: 'worker-runner', pattern: 'worker/src/runners/*', capture: ['runner'] },
  { type: 'worker', pattern: 'worker/src' },
  { type: 'native', pattern: 'native/src' },
  { type: 'host-shared', pattern: 'host/src/shared' },
  { type: 'host-core', pattern: 'host/src/core' },
  { type: 'host-shell', pattern: 'host/src/{cli,server,electron}' },
  { type: 'renderer', pattern: 'host/src/renderer' },
].map((l) => ({ ...l, partialMatch: false }));

const hostTypes = ['host-shared', 'host-core', 'host-shell', 'renderer'];
const workerTypes = ['worker', 'worker-desktop', 'worker-models', 'worker-runner'];
const el = (...types) => ({ element: { types } });
/** An import of these layers, of any kind (values and types). */
const anyOf = (types, message) => ({ disallow: { to: el(...types) }, message });
/** A value import of these layers (type-only imports stay allowed: only types cross). */
const valuesOf = (types, message) => ({
  disallow: { to: el(...types), dependency: { kind: 'value' } },
  message,
});
const from = (...types) => ({ element: { types } });
const nodeBuiltins = { to: { module: { origin: 'core' } } };

const layerPolicies = [
  {
    from: from('native'),
    ...anyOf(
      ['protocol', 'supervisor-common', 'supervisor', ...workerTypes, ...hostTypes],
      'native imports nothing of ours (but the recording format, @runboard/project/recording).',
    ),
  },
  {
    from: from('native', ...workerTypes),
    disallow: { to: { element: { types: 'project', fileInternalPath: '!recording.ts' } } },
    message:
      'Of the project model, native and the worker import only the recording format (@runboard/project/recording); cards and config reach a run as its FlowSpec.',
  },
  {
    from: { element: { types: '!native' } },
    disallow: {
      to: { element: { types: 'native', fileInternalPath: '!{index,regular-file,media-input}.ts' } },
    },
    message:
      'Import native only through its entry points, @runboard/native (native/src/index.ts), /regular-file and /media-input (small modules a process may load without the desktop code).',
  },
  {
    from: from('protocol'),
    ...anyOf(
      ['project', 'supervisor-common', 'supervisor', ...workerTypes, 'native', ...hostTypes],
      'The protocol module depends on nothing but vscode-jsonrpc and zod.',
    ),
  },
  {
    from: from('protocol'),
    disallow: [nodeBuiltins, { to: { module: { origin: 'external', source: '!{vscode-jsonrpc,zod}' } } }],
    message: 'The protocol module depends on nothing but vscode-jsonrpc and zod (every process loads it).',
  },
  {
    from: from('project'),
    ...anyOf(
      ['supervisor-common', 'supervisor', ...workerTypes, ...hostTypes],
      "The project model (@runboard/project) is pure: it imports nothing of the supervisor, the worker or the host (of ours only the protocol's data and native's regular-file reader).",
    ),
  },
  {
    from: from('project'),
    disallow: [
      {
        to: {
          element: {
            types: 'protocol',
            fileInternalPath: '!data.ts',
          },
        },
      },
      { to: { element: { types: 'native', fileInternalPath: '!regular-file.ts' } } },
      { to: { module: { origin: 'external', source: '!{yaml,zod,croner}' } } },
    ],
    message:
      'The project model (@runboard/project) is pure: the protocol only through @runboard/supervisor/protocol/data (not its transport), native only through @runboard/native/regular-file, of npm only yaml, zod and croner.',
  },
  {
    from: from('supervisor-common'),
    ...anyOf(
      ['supervisor', ...workerTypes, ...hostTypes],
      'supervisor/src/common is shared with the host: it never imports the supervisor process (src/node), the worker or the host.',
    ),
  },
  {
    from: from('supervisor'),
    ...anyOf(
      [...workerTypes, ...hostTypes],
      'The supervisor spawns the worker bundle and serves the host; it imports neither.',
    ),
  },
  {
    from: from(...workerTypes),
    ...anyOf(
      ['supervisor', 'supervisor-common', ...hostTypes],
      'worker never imports host code, and of the supervisor only @runboard/supervisor/protocol.',
    ),
  },
  {
    from: from(...hostTypes),
    ...anyOf(
      ['supervisor', ...workerTypes],
      'Import the supervisor only through its entry points (@runboard/supervisor/protocol, /protocol/data and the supervisor/src/common modules that supervisor/package.json exports); host never imports worker code.',
    ),
  },
  {
    from: from('worker-runner'),
    disallow: {
      to: {
        element: { types: 'worker-runner', captured: { runner: '!{{ from.element.captured.runner }}' } },
      },
    },
    message:
      "A runner imports no other runner's room: what runners share lives in worker/src/desktop (the desktop) or worker/src/models (the model stack).",
  },
  {
    from: from('worker-models'),
    ...anyOf(
      ['worker-desktop', 'worker-runner', 'native'],
      'The model stack (worker/src/models) imports no desktop (worker/src/desktop, native) and no runner: it speaks wire formats only.',
    ),
  },
  {
    from: from('worker-desktop', 'worker'),
    ...anyOf(
      ['worker-runner'],
      "Only a runner imports its room (worker/src/runners/<name>/): the desktop, the worker's core and the single-file runners do not (runners are loaded as bundles, runners/load.ts).",
    ),
  },
  {
    from: from('host-core', 'host-shared'),
    ...anyOf(
      ['host-shell', 'renderer'],
      'host core is shared by the CLI, the server and Electron: it never imports a shell or the renderer.',
    ),
  },
  {
    from: from('host-core', 'host-shared'),
    disallow: { to: { module: { source: 'electron' } } },
    message: 'host core runs under plain Node too: electron belongs to host/src/electron.',
  },
  {
    from: from('host-shared'),
    ...anyOf(
      ['host-core', 'host-shell', 'renderer'],
      'host/src/shared is imported by the untrusted renderer and by host core: types and pure code only, nothing else of the host.',
    ),
  },
  {
    from: from('host-shared', 'renderer'),
    ...valuesOf(
      ['protocol', 'supervisor-common', 'project', 'native'],
      'The renderer (and host/src/shared, which it loads) may import only types from the supervisor and native.',
    ),
  },
  {
    from: from('host-shared', 'renderer'),
    disallow: { to: { element: { types: 'protocol', fileInternalPath: '!data.ts' } } },
    message:
      "The renderer imports the protocol's types from @runboard/supervisor/protocol/data (its other entry brings the Node transport).",
  },
  {
    from: from('host-shared', 'renderer'),
    disallow: [nodeBuiltins, { to: { module: { source: 'electron' } } }],
    message: 'The renderer is untrusted: no Node, no electron; it talks through the typed bridge only.',
  },
  {
    from: from('renderer'),
    ...anyOf(
      ['host-core', 'host-shell'],
      'The renderer is untrusted: no host core; it talks through the typed bridge only.',
    ),
  },
];

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', 'native/build/**', 'test-results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        Buffer: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        TextDecoder: 'readonly',
        TextEncoder: 'readonly',
        queueMicrotask: 'readonly',
        setImmediate: 'readonly',
        structuredClone: 'readonly',
        performance: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  // Rules that need the types (a floating promise in the supervisor is a run that never ends). Each
  // TypeScript file belongs to one of the three environment tsconfigs.
  {
    files: ['**/*.{ts,tsx}'],
    languageOptions: {
      parserOptions: {
        project: ['./tsconfig.json', './tsconfig.renderer.json', './tsconfig.tests.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', exports: 'writable', module: 'writable' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['**/*.{ts,tsx,mjs,js}'],
    // Tests run under Node with the real parts around them; the layers are about shipped code.
    ignores: ['**/*.test.ts'],
    plugins: { boundaries },
    settings: {
      'boundaries/elements': layers,
      'boundaries/dependency-nodes': ['import', 'export', 'dynamic-import', 'require'],
      // createRequire(url)('x') loads like require('x'); a createRequire result bound to another name
      // than `require` is refused below, so every createRequire load is one of these two forms.
      'boundaries/additional-dependency-nodes': [
        {
          selector:
            'CallExpression[callee.type="CallExpression"][callee.callee.name="createRequire"] > Literal',
          kind: 'value',
          name: 'createRequire',
        },
      ],
      // Resolves the workspaces' package exports (@runboard/supervisor/protocol …) to their files.
      'import/resolver': { [path.join(import.meta.dirname, 'scripts/eslint-node-resolver.cjs')]: {} },
      'boundaries/legacy-warnings': false,
    },
    rules: {
      'boundaries/dependencies': [
        'error',
        { default: 'allow', checkAllOrigins: true, policies: layerPolicies },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: 'VariableDeclarator[init.callee.name="createRequire"][id.name!="require"]',
          message: "Name createRequire's result `require`, so the layer rules see what it loads.",
        },
      ],
    },
  },
);
