// A page bundled by Vite that imports the package by its name, as an app that installed it does.
// It streams one reply from the OpenAI-compatible endpoint given as `?url=` (the local model
// server in tests/vite/; its `echo` model answers "You said: <message>").
//
//   /index.html?url=http://127.0.0.1:PORT/v1[&message=hello]

import { Agent } from 'wasm-agent';

// Both are in index.html.
const status = /** @type {HTMLElement} */ (document.getElementById('status'));
const reply = /** @type {HTMLElement} */ (document.getElementById('reply'));

async function main() {
  const params = new URLSearchParams(location.search);
  const url = params.get('url');
  if (!url) {
    status.textContent = 'Add ?url=<an OpenAI-compatible base URL> to the address.';
    document.body.dataset.state = 'no-url';
    return;
  }
  const agent = new Agent({
    id: 'vite-example',
    instructions: 'Be concise.',
    // `echo` is a model of the local model server; a real app names a real model (and keeps its
    // key on a server of its own).
    model: { id: 'openai/echo', url, apiKey: 'unused' },
  });
  status.textContent = 'Streaming…';
  document.body.dataset.state = 'streaming';
  const out = await agent.stream(params.get('message') ?? 'hello');
  for await (const text of out.textStream) reply.append(text);
  status.textContent = 'Done.';
  document.body.dataset.state = 'done';
}

main().catch((err) => {
  status.textContent = `Failed: ${err?.message ?? err}`;
  document.body.dataset.state = 'failed';
});
