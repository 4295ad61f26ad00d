import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'models/', 'deploy/', 'bench/results/', '.kafka/', 'indexes/', 'tmp/', '.cache/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', performance: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', setImmediate: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    // The stage order of DEVELOPERS.md: a folder imports only from folders before it.
    files: ['src/**/*.ts'],
    rules: {},
  },
);
