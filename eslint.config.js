// `npm run lint` (run by `npm test` before the tests, docs/contributing.md#lint): a small rule set
// that catches real bugs cheaply. The type-aware rules (promises nobody awaits or that are passed
// where nothing awaits them) run over src/ only, where they matter most and the type check pays off;
// tests and benchmarks get the syntactic rules.
import tseslint from 'typescript-eslint';

const syntactic = {
  eqeqeq: ['error', 'always', { null: 'ignore' }],
  'no-unreachable': 'error',
  'no-dupe-keys': 'error',
  'no-self-assign': 'error',
  'no-unsafe-finally': 'error',
  'no-fallthrough': 'error',
  '@typescript-eslint/no-unused-vars': ['error', { args: 'after-used', argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
  '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports', disallowTypeAnnotations: false }],
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench/results/**'] },
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: syntactic,
  },
  {
    files: ['src/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: true }],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
    },
  },
);
