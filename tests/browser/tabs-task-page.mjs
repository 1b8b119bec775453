// The page of the background-task tests in tests/browser/tabs.test.mjs: an agent with
// IndexedDB memory (database "tabs-task-test") and a background `research` tool that takes
// `ms` (query string, default 60000), on thread `thread` (default t1).

import { Agent, Memory, IndexedDBStore, createTool } from '/pkg/index.browser.js';

const query = new URLSearchParams(location.search);
const url = query.get('model');
const thread = query.get('thread') ?? 't1';
const ms = Number(query.get('ms') ?? 60_000);
if (!url) throw new Error('tabs-task-page: the ?model= query parameter (the model server URL) is missing');

const research = createTool({
  id: 'research',
  description: 'Research a topic in depth (takes a while)',
  inputSchema: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
  background: { enabled: true },
  execute: async ({ topic }) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { topic, summary: `research on ${topic}` };
  },
});

const memory = new Memory({ storage: new IndexedDBStore({ name: 'tabs-task-test' }) });
const agent = new Agent({
  id: 'tabs-researcher',
  model: { id: 'openai/tabs-research', url, apiKey: 'k' },
  tools: { research },
  memory,
  backgroundTasks: { enabled: true },
});

window.events = [];
memory.watch({ threadId: thread }, (e) => window.events.push(e));

async function read(out) {
  const types = [];
  for await (const chunk of out.fullStream) types.push(chunk.type);
  return { types, text: await out.text };
}

/** A plain stream that starts the research in the background. */
window.start = async () => read(await agent.stream('research solana', { memory: { thread, resource: 'u1' } }));

/** An untilIdle stream on the thread; resolves when it closes with every chunk type and the full text. */
window.idle = async (text) => {
  const out = await agent.stream(text, { memory: { thread, resource: 'u1' }, untilIdle: true });
  const types = [];
  let all = '';
  for await (const chunk of out.fullStream) {
    types.push(chunk.type);
    if (chunk.type === 'text-delta') all += chunk.payload.text;
  }
  return { types, text: all };
};

window.messages = () => memory.listMessages({ threadId: thread, format: 'ui' });

document.querySelector('#status').textContent = `thread ${thread}`;
document.body.dataset.ready = '1';
