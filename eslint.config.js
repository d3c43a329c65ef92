// One lint setup for the whole repo. The layering of shared/DESIGN.md is enforced here, mechanically:
//  - native imports nothing of ours;
//  - worker never imports host, and of the supervisor only its protocol entry point;
//  - host never imports worker, and of the supervisor only its public entry points (protocol, paths, grants, git);
//  - the renderer (host/src/renderer) never imports Node built-ins or host core code.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const supervisorInternals = {
  group: ['**/supervisor/src/**', '@runboard/supervisor/src/**'],
  message:
    'Import the supervisor only through its entry points (@runboard/supervisor/protocol, /paths, /grants, /git).',
};
const workerAny = {
  group: ['@runboard/worker', '@runboard/worker/**', '**/worker/src/**'],
  message: 'host never imports worker code.',
};
const hostAny = {
  group: ['@runboard/host', '@runboard/host/**', '**/host/src/**'],
  message: 'Only the host may import host code.',
};

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
  {
    files: ['native/**/*.{ts,mjs,js}'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@runboard/*', '**/host/**', '**/supervisor/**', '**/worker/**'],
              message: 'native imports nothing of ours.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['worker/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [hostAny, supervisorInternals] }] },
  },
  {
    files: ['supervisor/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            hostAny,
            {
              group: ['@runboard/worker', '@runboard/worker/**', '**/worker/src/**'],
              message: 'The supervisor spawns the worker bundle; it never imports worker code.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['supervisor/src/protocol/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['node:*', '../**', '@runboard/*'],
              message: 'The protocol module depends on nothing but vscode-jsonrpc and zod.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['host/**/*.{ts,tsx}'],
    rules: { 'no-restricted-imports': ['error', { patterns: [workerAny, supervisorInternals] }] },
  },
  {
    files: ['host/src/renderer/**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['node:*', 'fs', 'child_process', 'electron', '**/core/**', '**/cli/**', '**/server/**'],
              message:
                'The renderer is untrusted: no Node, no host core; it talks through the typed bridge only.',
            },
            workerAny,
            supervisorInternals,
          ],
        },
      ],
    },
  },
);
