// The page of tests/browser/tabs.test.mjs: an agent with IndexedDB memory (database
// "tabs-test") that watches one thread (SPEC §21.2) and keeps every event it gets in
// `window.events`; the reply text it sees streaming (from any tab) is shown in #live.
//
// Query string: model (the model server's /v1 URL, required), thread (default t1).

import { Agent, Memory, IndexedDBStore } from '/pkg/index.browser.js';

const query = new URLSearchParams(location.search);
const url = query.get('model');
const thread = query.get('thread') ?? 't1';
if (!url) throw new Error('tabs-page: the ?model= query parameter (the model server URL) is missing');

const memory = new Memory({ storage: new IndexedDBStore({ name: 'tabs-test' }) });
const agent = new Agent({ id: 'tabs', model: { id: 'openai/tabs-gated', url, apiKey: 'k' }, memory });
const live = document.querySelector('#live');

/** Every event of the watched thread, in arrival order. */
window.events = [];
/** The stored messages read when the page started watching (listMessages, then watch). */
window.initial = await memory.listMessages({ threadId: thread });
memory.watch({ threadId: thread }, (e) => {
  window.events.push(e);
  if (e.type === 'chunk' && e.chunk.type === 'start') live.textContent = '';
  if (e.type === 'chunk' && e.chunk.type === 'text-delta') live.textContent += e.chunk.payload.text;
});

/** Streams a reply to `text` on the page's thread; resolves with { text, types, runId }. */
window.send = async (text) => {
  const out = await agent.stream(text, { memory: { thread, resource: 'u1' } });
  const types = [];
  for await (const chunk of out.fullStream) types.push(chunk.type);
  return { text: await out.text, types, runId: out.runId };
};

window.deleteThread = () => memory.deleteThread(thread);

document.querySelector('#status').textContent = `watching thread ${thread}`;
document.body.dataset.ready = '1';
