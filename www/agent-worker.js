// The demo's agent in a SharedWorker (the Settings switch "Run the agent in a SharedWorker",
// on by default where the browser has SharedWorker): every tab of the demo streams its replies
// through this one worker with wasm-agent/client, so a long reply never blocks a page. It serves
// the server's model (/config.json, with the page's switches from this script's URL); the
// conversations are in the same IndexedDB database as the page's.
import * as pkg from '/pkg/index.browser.js';
import { buildDemoAgent, isOfflineDemoModel, serverMemoryOptions } from './demo-agent.js';
import { TRACE_CHANNEL } from './trace-exporter.js';

const LAST_MESSAGES = 40; // as app.js

const res = await fetch(`/config.json${location.search}`, { cache: 'no-store' });
const config = await res.json();
const memory = new pkg.Memory({ options: serverMemoryOptions(config, LAST_MESSAGES) });
const demo = isOfflineDemoModel(config);
// The spans of each finished run go to the tabs (each keeps its own runs' for its Trace view).
const traces = new BroadcastChannel(TRACE_CHANNEL);
const onTrace = (trace) => traces.postMessage(trace);
pkg.serveAgents({ demo: buildDemoAgent(pkg, { model: config.model, demo, memory, onTrace }) });
