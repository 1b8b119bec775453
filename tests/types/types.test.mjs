// The package's TypeScript types (`node --test tests/types/`): runs tests/types/run.mjs, which
// type-checks tests/types/api.ts, the README's code blocks and the examples against pkg/ with tsc.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const RUNNER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'run.mjs');

test('tsc --noEmit passes over tests/types/api.ts, every README code block and the examples', { timeout: 120_000 }, async () => {
  const child = spawn(process.execPath, [RUNNER], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (text) => (output += text));
  child.stderr.setEncoding('utf8').on('data', (text) => (output += text));
  const timer = setTimeout(() => child.kill('SIGKILL'), 110_000);
  const code = await new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status, signal) => resolve(status ?? signal));
  });
  clearTimeout(timer);
  assert.equal(code, 0, `type errors (node tests/types/run.mjs):\n${output}`);
});
