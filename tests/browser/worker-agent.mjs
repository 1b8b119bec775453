// The worker of tests/browser/worker.test.mjs (a dedicated module Worker or a SharedWorker):
// agents with IndexedDB memory, served to the page with serveAgents. Query string: model (the
// model server's /v1 URL).
import { Agent, Memory, IndexedDBStore, serveAgents } from '/pkg/index.browser.js';

const url = new URL(self.location.href).searchParams.get('model');
const memory = new Memory({ storage: new IndexedDBStore({ name: 'worker-test' }) });
const pickColour = {
  id: 'pickColour',
  description: 'Ask the user to pick a colour',
  inputSchema: { type: 'object', properties: { hint: { type: 'string' } }, required: ['hint'] },
};
const agent = (script) =>
  new Agent({ id: `w-${script}`, model: { id: `openai/${script}`, url, apiKey: 'offline' }, memory, defaultOptions: { clientTools: { pickColour } } });

serveAgents({ echo: agent('echo'), slow: agent('slow:60'), tool: agent('tool-call') });
