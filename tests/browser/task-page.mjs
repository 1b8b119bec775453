// The page of tests/browser/reload-task.test.mjs: an agent with IndexedDB memory and a background
// `research` tool, created as soon as the page loads (which is when the package recovers tasks
// a previous page left running).
//
// Query string: model (the model server's /v1 URL, required), script (the model server script,
// default reload-research), ms (how long research takes, default 60000), thread (default t1).

import { Agent, Memory, IndexedDBStore, createTool } from '/pkg/index.browser.js';

const DB = 'reload-test';
const query = new URLSearchParams(location.search);
const url = query.get('model');
const script = query.get('script') ?? 'reload-research';
let ms = Number(query.get('ms') ?? 60_000);
const thread = query.get('thread') ?? 't1';
const status = document.querySelector('#status');

if (!url) throw new Error('task-page: the ?model= query parameter (the model server URL) is missing');

const research = createTool({
  id: 'research',
  description: 'Research a topic in depth (takes a while)',
  inputSchema: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
  background: { enabled: true },
  execute: async ({ topic }) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { topic, summary: `research on ${topic} took ${ms} ms` };
  },
});

const agent = new Agent({
  id: 'researcher',
  model: { id: `openai/${script}`, url, apiKey: 'k' },
  tools: { research },
  memory: new Memory({ storage: new IndexedDBStore({ name: DB }) }),
  backgroundTasks: { enabled: true },
});

/** How long research calls started from now on take. */
window.setResearchMs = (n) => {
  ms = n;
};

/** Starts the research turn (a plain stream) in `t` (default: the page's thread) and reads it to the end. */
window.start = async (t = thread) => {
  status.textContent = `thread ${t}: streaming…`;
  const out = await agent.stream('research solana', { memory: { thread: t, resource: 'u1' } });
  const types = [];
  for await (const chunk of out.fullStream) types.push(chunk.type);
  const text = await out.text;
  status.textContent = `thread ${t}: the turn ended`;
  return { types, text };
};

/** A thread's stored messages as UI messages, read through a fresh Memory on the same database. */
window.messages = (t = thread) => new Memory({ storage: new IndexedDBStore({ name: DB }) }).listMessages({ threadId: t, format: 'ui' });

/** The background tasks this page's agent knows. */
window.tasks = () => agent.listBackgroundTasks();

/** The task records in the database itself (read with the IndexedDB API, not through the package). */
window.storedTasks = () =>
  new Promise((resolve, reject) => {
    const open = indexedDB.open(DB);
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      if (!db.objectStoreNames.contains('tasks')) {
        db.close();
        return resolve([]);
      }
      const req = db.transaction('tasks', 'readonly').objectStore('tasks').getAll();
      req.onsuccess = () => {
        db.close();
        resolve(req.result);
      };
      req.onerror = () => {
        db.close();
        reject(req.error);
      };
    };
  });

/** Shows the stored messages and task records on the page (textContent only). */
window.render = async (heading, t = thread) => {
  const [messages, stored] = await Promise.all([window.messages(t), window.storedTasks()]);
  const box = document.querySelector('#messages');
  box.replaceChildren();
  for (const m of messages) {
    const div = document.createElement('div');
    div.className = 'msg';
    const role = document.createElement('div');
    role.className = 'role';
    role.textContent = m.role;
    div.append(role);
    for (const p of m.parts) {
      if (p.type === 'step-start') continue;
      const el = document.createElement('div');
      el.className = 'part';
      if (p.type === 'text') el.textContent = p.text;
      else if (p.type.startsWith('tool-')) {
        el.classList.add('tool', p.state);
        const body = p.state === 'output-error' ? `errorText: ${p.errorText}` : p.state === 'output-available' ? `output: ${JSON.stringify(p.output)}` : '';
        el.textContent = `${p.type} (${p.toolCallId}) state=${p.state}\ninput: ${JSON.stringify(p.input)}\n${body}`;
      } else el.textContent = JSON.stringify(p);
      div.append(el);
    }
    box.append(div);
  }
  document.querySelector('#tasks').textContent = stored.map((t) => `${t.id} ${t.toolName} thread=${t.threadId} status=${t.status}${t.error ? ` error=${t.error}` : ''}`).join('\n') || '(none)';
  if (heading) status.textContent = heading;
  return messages;
};

status.textContent = `thread ${thread}: agent created (research takes ${ms} ms)`;
document.body.dataset.ready = '1';
