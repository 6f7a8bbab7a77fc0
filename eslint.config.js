// Lint: the recommended TypeScript rules, plus the few that catch real bugs in async broker code.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'packages/*/dist/**', 'examples/*/node_modules/**', 'examples/*/dist/**', '.next/**', '.next-*/**', '.nimbus/**', 'coverage/**', '.tmp/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // Plain scripts run on Node: give them Node's globals (TypeScript files get them from @types/node).
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly' } },
  },
  {
    files: ['**/*.ts', '**/*.tsx'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'off',
      eqeqeq: ['error', 'smart'],
    },
  },
  {
    // The console's browser code: every page's first-load bundle. zod's classic API (directly, or through the
    // contract barrel, whose schemas are built at module level) would put ~155 KB more into each page, zod/mini its
    // 85 KB core (docs/console.md). Names come from '@nimbus/sdk/contract/names', URL schemas from valibot; types are free.
    files: ['components/**/*.ts', 'components/**/*.tsx'],
    ignores: ['**/*.test.ts', 'components/payload/check.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            { name: 'zod', message: "Browser code uses valibot for schemas (zod's classic API would be in every page's first load).", allowTypeImports: true },
            { name: 'zod/mini', message: "Browser code uses valibot for schemas (zod/mini's core is 85 KB in every page's first load).", allowTypeImports: true },
            { name: '@nimbus/sdk/contract', message: "Import names from '@nimbus/sdk/contract/names' (the barrel brings zod's classic API into every page).", allowTypeImports: true },
          ],
        },
      ],
    },
  },
);
