// One ESLint config for every workspace package (each runs `eslint .` from its own folder).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    ignores: [
      '**/dist/**',
      '**/src/gen/**',
      '**/node_modules/**',
      '**/test-artifacts/**',
      '**/*.js',
      '**/*.mjs',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': [
        'error',
        { checksVoidReturn: { arguments: false, attributes: false } },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/only-throw-error': 'error',
    },
  },
  {
    // The domain is pure: decide/evolve over plain data. No I/O, no clock, no framework.
    files: ['**/src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'domain code does no I/O' },
            {
              group: [
                'kafkajs',
                'knex',
                'pg',
                'express',
                '@grpc/*',
                '@mds/kafka',
                '@mds/db',
                '@mds/grpc',
                '@mds/service-kit',
                '@mds/local-infra',
              ],
              message: 'domain code knows no adapters',
            },
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']",
          message: 'time arrives in commands',
        },
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: 'time arrives in commands',
        },
        {
          selector: "CallExpression[callee.object.name='Math'][callee.property.name='random']",
          message: 'ids arrive in commands',
        },
      ],
      'no-restricted-globals': ['error', { name: 'fetch', message: 'domain code does no I/O' }],
    },
  },
  {
    // The application owns its ports: use cases declare the interfaces they need, and adapters (outbound)
    // implement them; inbound code (api/: HTTP, gRPC, consumers) calls the application, never the reverse.
    files: ['**/src/application/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/adapters', '**/adapters/**', '**/api', '**/api/**'],
              message:
                'application code declares ports; adapters implement them (no imports of adapters/ or api/)',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.test.ts', '**/test/**/*.ts', '**/fixtures/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/require-await': 'off',
      // expect.any() / expect.stringMatching() are typed any by design.
      '@typescript-eslint/no-unsafe-assignment': 'off',
    },
  },
  prettier,
);
