// The demo's agent, built the same way in the page (app.js) and in its SharedWorker
// (agent-worker.js): the clock tool, the offline demo's background research tool, and a writer
// sub-agent. `location.search` holds the page's switches in both (the worker's URL carries them).

import { traceCollector } from './trace-exporter.js';

/** Whether `config` (/config.json) is the offline demo model. */
export function isOfflineDemoModel(config) {
  return config?.mode === 'offline' && /^openai\/demo(?::\d+)?$/.test(config.model?.id ?? '');
}

/** The memory options of the server's model: titles as /config.json says. */
export function serverMemoryOptions(config, lastMessages) {
  // Titles: the provider's model writes them; the offline model only when /?title=<script>
  // names a script for it (else the list shows each thread's first words).
  const titles = config.titles;
  const generateTitle = titles === true ? true : titles?.model ? { model: titles.model } : false;
  return { lastMessages, generateTitle };
}

/** The demo's one tool: the current date and time, read where the agent runs (page or worker). */
function makeClockTool(createTool) {
  const approve = new URLSearchParams(location.search).get('approve') === '1';
  return createTool({
    id: 'clock',
    description: "The current date and time. Give an IANA time zone such as Europe/Paris, or none for the user's own.",
    inputSchema: {
      type: 'object',
      properties: { timeZone: { type: 'string', description: 'An IANA time zone, e.g. Asia/Tokyo' } },
    },
    requireApproval: approve,
    async execute(input, context) {
      const zone = input?.timeZone || Intl.DateTimeFormat().resolvedOptions().timeZone;
      await context?.writer?.write(`Reading the clock (${zone})`);
      // An unknown zone throws a RangeError: the card shows it and the model is told.
      return new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'long', timeZone: zone }).format(new Date());
    },
  });
}

/** Waits `ms`; rejects when `signal` aborts. */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason ?? new Error('aborted'));
      },
      { once: true },
    );
  });
}

/** How long each of the research tool's three steps takes (`?research=<ms>` changes it). */
const RESEARCH_STEP_MS = Math.max(0, Number(new URLSearchParams(location.search).get('research')) || 1_000);

/**
 * The offline demo's background tool: "researches" a topic in three steps (each a progress line
 * of its card), then returns a short note. It runs as a background task, so the reply says it
 * started and goes on; the agent answers its result in a follow-up turn of the same reply.
 */
function makeResearchTool(createTool) {
  return createTool({
    id: 'research',
    description: 'Research a topic in depth. It runs in the background: the result arrives in a later turn.',
    inputSchema: {
      type: 'object',
      properties: { topic: { type: 'string', description: 'What to research, e.g. solana' } },
      required: ['topic'],
    },
    background: { enabled: true, timeoutMs: 60_000 },
    async execute({ topic }, context) {
      const steps = [`Looking for sources about ${topic}`, 'Reading 3 sources', 'Writing up the findings'];
      for (const line of steps) {
        await context?.writer?.write(line);
        await sleep(RESEARCH_STEP_MS, context?.abortSignal);
      }
      return `${topic}: 3 sources read and summarised (offline demo: nothing was really looked up).`;
    },
  });
}

/**
 * The demo Agent on `model` (the offline demo model also gets the research tool). `onTrace`, when
 * given, gets the spans of each finished run (trace-exporter.js); the writer's spans are in them,
 * nested under the call that delegated to it.
 */
export function buildDemoAgent(pkg, { model, demo, memory, onTrace }) {
  const clockTool = makeClockTool(pkg.createTool);
  const researchTool = makeResearchTool(pkg.createTool);
  // A sub-agent the model may hand writing to: its run streams inside the call's card.
  const writer = new pkg.Agent({
    id: 'writer',
    name: 'Writer',
    description: 'Writes a short paragraph on a topic it is given and hands it back.',
    instructions: 'You write one short, vivid paragraph on the topic you are given.',
    model,
    // Offline, the demo model writes at a readable pace.
    ...(demo ? { defaultOptions: { modelSettings: { headers: { 'x-script': 'demo:40' } } } } : {}),
  });
  return new pkg.Agent({
    id: 'demo',
    name: 'Demo',
    instructions: 'You are a helpful, concise assistant. Format replies with Markdown when it helps.',
    model,
    tools: demo ? { clock: clockTool, research: researchTool } : { clock: clockTool },
    agents: { writer },
    memory,
    backgroundTasks: { enabled: true },
    ...(onTrace ? { observability: { exporters: [traceCollector(onTrace)] } } : {}),
  });
}
