// A new process that approves a run another process suspended (tests/js/suspend-resume.test.mjs):
// node suspend-child.mjs <storage file> <model server url> <x-test-id> <runId>
// Prints one JSON line: { types, text, finishReason, calls }.

import { Agent, Memory, createTool } from '../../pkg/index.node.js';
import { fileStorage } from './suspend-helpers.mjs';

const [file, url, testId, runId] = process.argv.slice(2);
const calls = [];
const pay = createTool({
  id: 'pay',
  description: 'Pays an amount',
  inputSchema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
  requireApproval: true,
  execute: async (input) => {
    calls.push(input);
    return { paid: input.amount, by: 'child' };
  },
});
const agent = new Agent({
  id: 'payer',
  instructions: 'Pay when asked.',
  model: { id: 'openai/tool-call', url, apiKey: 'test-key', api: 'chat', headers: { 'x-test-id': testId } },
  tools: { pay },
  memory: new Memory({ storage: fileStorage(file) }),
});
const out = await agent.approveToolCall({ runId });
const types = [];
for await (const chunk of out.fullStream) types.push(chunk.type);
console.log(JSON.stringify({ types, text: await out.text, finishReason: await out.finishReason, calls }));
