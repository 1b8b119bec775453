// The page of tests/browser/approve-reload.test.mjs: an agent with no memory and an
// approval-gated `pay` tool. Its runs go to the default storage (IndexedDB in a page), so a run
// suspended before a reload can be approved after it.
//
// Query string: model (the model server's /v1 URL, required).

import { Agent, createTool } from '/pkg/index.browser.js';

const url = new URLSearchParams(location.search).get('model');
if (!url) throw new Error('approve-page: the ?model= query parameter (the model server URL) is missing');
window.paid = [];

const pay = createTool({
  id: 'pay',
  description: 'Pays an amount',
  inputSchema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
  requireApproval: true,
  execute: async ({ amount }) => {
    window.paid.push(amount);
    return { paid: amount };
  },
});
const agent = new Agent({ id: 'payer', model: { id: 'openai/tool-call', url, apiKey: 'k' }, tools: { pay } });

async function read(out) {
  const types = [];
  for await (const chunk of out.fullStream) types.push(chunk.type);
  return { runId: out.runId, types, text: await out.text, finishReason: await out.finishReason };
}

/** Streams until the run suspends on the approval (the stream ends there). */
window.start = async () => read(await agent.stream('Pay 5', { closeOnSuspend: true }));
window.suspended = async () => (await agent.listSuspendedRuns()).runs.map((r) => r.runId);
window.approve = async (runId) => read(await agent.approveToolCall({ runId }));
/** approve(), or the ResumeError it rejected with. */
window.tryApprove = async (runId) => {
  try {
    return { done: await window.approve(runId) };
  } catch (e) {
    return { error: { name: e.name, code: e.code } };
  }
};
window.approveError = async (runId) => {
  try {
    await agent.approveToolCall({ runId });
    return null;
  } catch (e) {
    return { name: e.name, code: e.code };
  }
};

document.querySelector('#status').textContent = 'ready';
document.body.dataset.ready = '1';
