import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bin/**', 'scripts/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
      eqeqeq: ['error', 'always'],
      // pino writes the message under `msg`: a `msg` field in the bindings makes a log line with the key twice (and
      // JSON readers keep only one of them)
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.property.name=/^(trace|debug|info|warn|error|fatal|child)$/] > ObjectExpression > Property:matches([key.name='msg'], [key.value='msg'])",
          message: 'a log field named msg collides with the log message: name it err or reason',
        },
      ],
    },
  },
  { files: ['src/cli/**', 'scripts/**', 'test/**'], rules: { 'no-console': 'off' } },
);
