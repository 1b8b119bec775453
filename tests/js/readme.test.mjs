// The README's examples, run as tests. Each example sits between `// README:<name>` and
// `// END` exactly as the README shows it, except for two lines: the imports are comments here
// (this file imports at the top) and `model:` points at the local model server instead of
// 'openai/gpt-4o-mini'. `console.log` is captured so the test can check what the example prints.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { format } from 'node:util';
import { z } from 'zod';
import { Agent, T, noUnhandledRejections, useModelServer } from './helpers.mjs';
import { createScorer, createStep, createWorkflow } from '../../pkg/index.node.js';
import { createTool } from './tools-helpers.mjs';
import { BatchPartsProcessor } from '../../pkg/index.node.js';

const server = useModelServer();

/** A stand-in for `console` whose `log` lines are kept (and not printed). */
function capture() {
  const lines = [];
  return { lines, log: (...args) => lines.push(format(...args)) };
}

test('README: a weather tool with a JSON Schema', T, async () => {
  const console = capture();
  const MODEL_URL = server.current.url;

  // README:weather-tool
  // import { Agent, createTool } from 'wasm-agent'

  const weather = createTool({
    id: 'weather',
    description: 'Current weather for a city',
    inputSchema: {
      type: 'object',
      properties: { city: { type: 'string', description: 'City name, e.g. Paris' } },
      required: ['city'],
    },
    execute: async ({ city }, { abortSignal }) => {
      // Call your weather service here; pass abortSignal to fetch so an abort stops it.
      return { city, temperatureC: 18, conditions: 'sunny' }
    },
  })

  const agent = new Agent({
    id: 'forecaster',
    instructions: 'Use the weather tool to answer.',
    model: { id: 'openai/tool-call', url: MODEL_URL, apiKey: 'local' }, // README: model: 'openai/gpt-4o-mini',
    tools: { weather },
  })

  const out = await agent.stream('What is the weather in Paris?')
  for await (const chunk of out.fullStream) {
    if (chunk.type === 'tool-call') console.log('calling', chunk.payload.toolName, chunk.payload.args)
    if (chunk.type === 'tool-result') console.log('result', chunk.payload.result)
  }
  console.log(await out.text)
  console.log((await out.steps).length, 'steps')
  // END

  assert.equal(console.lines.length, 4, console.lines.join('\n'));
  assert.equal(console.lines[0], "calling weather { city: 'Paris' }");
  assert.match(console.lines[1], /^result \{ city: 'Paris', (temperatureC: 18, conditions: 'sunny'|conditions: 'sunny', temperatureC: 18) \}$/);
  assert.match(console.lines[2], /^The tool said: \{.*"city":"Paris".*\}$/);
  assert.deepEqual(JSON.parse(console.lines[2].slice('The tool said: '.length)), { city: 'Paris', temperatureC: 18, conditions: 'sunny' });
  assert.equal(console.lines[3], '2 steps');
  // What the model was sent (openai/ speaks the Responses API): the instructions, the tool, then
  // the call and its result.
  const [first, second] = server.current.requests.filter((r) => r.body?.tools?.[0]?.name === 'weather').slice(-2);
  assert.equal(first.path, '/v1/responses');
  assert.deepEqual(first.body.input[0], { role: 'system', content: 'Use the weather tool to answer.' });
  assert.equal(first.body.tools[0].description, 'Current weather for a city');
  assert.deepEqual(second.body.input.map((i) => i.role ?? i.type), ['system', 'user', 'function_call', 'function_call_output']);
});

test('README: a zod-typed tool', T, async () => {
  const console = capture();
  const MODEL_URL = server.current.url;

  // README:zod-tool
  // import { Agent, createTool } from 'wasm-agent'
  // import { z } from 'zod'

  const tasks = new Map()
  const addTask = createTool({
    id: 'add-task',
    description: 'Add a task to the to-do list',
    inputSchema: z.object({
      title: z.string().min(1).describe('What to do'),
      due: z.iso.date().describe('Due date, YYYY-MM-DD'),
      priority: z.enum(['low', 'normal', 'high']).default('normal'),
    }),
    // `task` is what zod parsed (defaults filled in). Arguments that fail the schema never get
    // here: the model is told which field was wrong and can call again.
    execute: async (task) => {
      tasks.set(task.title, task)
      return { added: task.title, open: tasks.size }
    },
  })

  const agent = new Agent({
    id: 'planner',
    model: { id: 'openai/tool-call', url: MODEL_URL, apiKey: 'local' }, // README: model: 'openai/gpt-4o-mini',
    tools: { addTask },
  })

  const out = await agent.stream('Remind me to file my taxes by 2025-04-15')
  for await (const chunk of out.fullStream) {
    if (chunk.type === 'tool-error') console.log('tool error:', chunk.payload.error.message)
  }
  console.log([...tasks.values()])
  console.log(await out.text)
  // END

  assert.equal(console.lines.length, 2, console.lines.join('\n'));
  assert.deepEqual([...tasks.values()], [{ title: 'example', due: '2025-01-01', priority: 'normal' }]);
  assert.equal(console.lines[0], "[ { title: 'example', due: '2025-01-01', priority: 'normal' } ]");
  assert.deepEqual(JSON.parse(console.lines[1].slice('The tool said: '.length)), { added: 'example', open: 1 });
  // The model was shown the schema zod describes.
  const request = server.current.requests.filter((r) => r.body?.tools?.[0]?.name === 'addTask')[0].body;
  const { parameters } = request.tools[0];
  assert.deepEqual(parameters.required, ['title', 'due']);
  assert.equal(parameters.properties.due.format, 'date');
  assert.deepEqual(parameters.properties.priority.enum, ['low', 'normal', 'high']);
});

test('README: generate()', T, async () => {
  const console = capture();
  const MODEL_URL = server.current.url;

  // README:generate
  // import { Agent } from 'wasm-agent'

  const agent = new Agent({ id: 'summarizer', instructions: 'Answer in one sentence.', model: { id: 'openai/echo', url: MODEL_URL, apiKey: 'local' } }) // README: model: 'openai/gpt-4o-mini' })
  try {
    const result = await agent.generate('What is WebAssembly?', { modelSettings: { maxOutputTokens: 100 } })
    console.log(result.text)
    console.log(result.finishReason, result.totalUsage.totalTokens, 'tokens')
  } catch (error) {
    console.log('failed:', String(error)) // an APICallError with status and body, or a TypeError
  }
  // END

  assert.equal(console.lines.length, 2, console.lines.join('\n'));
  assert.equal(console.lines[0], 'You said: What is WebAssembly?');
  assert.match(console.lines[1], /^stop \d+ tokens$/);
  const request = server.current.requests.filter((r) => r.body?.input?.[0]?.content === 'Answer in one sentence.').at(-1).body;
  assert.equal(request.max_output_tokens, 100);
});

test('README: structured output with a zod schema', T, async () => {
  const console = capture();
  const MODEL_URL = server.current.url;

  // README:structured-output
  // import { Agent } from 'wasm-agent'
  // import { z } from 'zod'

  const agent = new Agent({ id: 'summariser', instructions: 'Summarise the thread.', model: { id: 'openai/json', url: MODEL_URL, apiKey: 'local' } }) // README: const agent = new Agent({ id: 'summariser', instructions: 'Summarise the thread.', model: 'openai/gpt-4o-mini' })

  const out = await agent.stream('Alice: can we ship on Friday? Bob: yes, once QA signs off on Thursday.', {
    structuredOutput: { schema: z.object({ title: z.string(), bullets: z.array(z.string()) }) },
  })
  // The object fills in while the JSON streams; `object` is the validated value (zod parsed it).
  for await (const partial of out.objectStream) console.log('so far:', JSON.stringify(partial))
  const summary = await out.object
  console.log(summary.title, summary.bullets)
  // END

  // The local model answers with a value made to fit the schema it was sent: {"title":"example","bullets":["example"]}.
  const partials = console.lines.filter((l) => l.startsWith('so far: '));
  assert.ok(partials.length >= 3, console.lines.join('\n'));
  assert.equal(partials[0], 'so far: {}');
  assert.equal(partials.at(-1), 'so far: {"title":"example","bullets":["example"]}');
  assert.equal(console.lines.at(-1), "example [ 'example' ]");
  // openai/ speaks the Responses API: the strict-compatible schema went in text.format.
  const request = server.current.requests.filter((r) => r.body?.text?.format?.name === 'response').at(-1);
  assert.equal(request.path, '/v1/responses');
  assert.equal(request.body.text.format.strict, true);
  assert.deepEqual(request.body.text.format.schema.required, ['title', 'bullets']);
});

test('README: guardrails with processors', T, async () => {
  const console = capture();
  const MODEL_URL = server.current.url;

  // README:guardrails
  // import { Agent, BatchPartsProcessor } from 'wasm-agent'

  const noCardNumbers = {
    id: 'no-card-numbers',
    // Before the model is called: what this returns is what the model sees and memory stores.
    processInput: ({ messages }) =>
      messages.map((m) => ({
        ...m,
        content: { ...m.content, parts: m.content.parts.map((p) => (p.type === 'text' ? { ...p, text: p.text.replace(/\d{12,19}/g, '[card]') } : p)) },
      })),
  }
  const noShouting = {
    id: 'no-shouting',
    // Each chunk as it streams: return it (changed or not), null to drop it, or stop the run.
    processOutputStream: ({ part, abort }) => {
      if (part.type === 'text-delta' && /[A-Z]{8,}/.test(part.payload.text)) abort('The reply was shouting', { metadata: { policy: 'tone' } })
      return part
    },
  }

  const agent = new Agent({
    id: 'support',
    model: { id: 'openai/echo', url: MODEL_URL, apiKey: 'local' }, // README: model: 'openai/gpt-4o-mini',
    inputProcessors: [noCardNumbers],
    outputProcessors: [noShouting, new BatchPartsProcessor({ batchSize: 3 })],
  })

  const out = await agent.stream('My card 4242424242424242 was charged twice')
  for await (const chunk of out.fullStream) {
    if (chunk.type === 'tripwire') console.log('stopped by', chunk.payload.processorId + ':', chunk.payload.reason)
  }
  console.log(await out.text, '|', await out.finishReason)
  // END

  assert.deepEqual(console.lines, ['You said: My card [card] was charged twice | stop']);
  const sent = server.current.requests.filter((r) => r.body?.input?.some?.((i) => JSON.stringify(i).includes('[card]')));
  assert.equal(sent.length, 1, 'the model saw the redacted message');
  assert.ok(!JSON.stringify(sent[0].body).includes('4242'));
  const steps = await out.steps;
  assert.equal(steps[0].text, 'You said: My card [card] was charged twice');
  // The same agent stops a shouting reply with a tripwire.
  const loud = await agent.stream('please STOPSHOUTING now')
  const chunks = []
  for await (const chunk of loud.fullStream) chunks.push(chunk)
  assert.deepEqual(chunks.filter((c) => c.type === 'tripwire').map((c) => c.payload), [{ reason: 'The reply was shouting', metadata: { policy: 'tone' }, processorId: 'no-shouting' }]);
  assert.equal(await loud.finishReason, 'tripwire');
  assert.equal(await loud.text, 'You said: please');
});

test('README: scorers', T, async () => {
  const console = capture();
  const MODEL_URL = server.current.url;

  // README:scorers
  // import { Agent, createScorer } from 'wasm-agent'

  const concise = createScorer({ id: 'concise', description: 'Short answers score higher' })
    .preprocess(({ run }) => run.output.flatMap((m) => m.content.parts).filter((p) => p.type === 'text').map((p) => p.text).join(''))
    .generateScore(({ results }) => Math.max(0, 1 - results.preprocessStepResult.length / 500))
    .generateReason(({ results, score }) => `${results.preprocessStepResult.length} characters: ${score}`)

  const agent = new Agent({
    id: 'support',
    instructions: 'Be brief.',
    model: { id: 'openai/echo', url: MODEL_URL, apiKey: 'local' }, // README: model: 'openai/gpt-4o-mini',
    scorers: { concise: { scorer: concise } },
  })

  const out = await agent.stream('What is WebAssembly?')
  console.log(await out.text)
  // Scored after the stream closed, without delaying it (in a Worker: ctx.waitUntil(out.scores)).
  for (const s of await out.scores) console.log(s.scorerId, s.score, '-', s.reason)
  // END

  const reply = 'You said: What is WebAssembly?';
  assert.deepEqual(console.lines, [reply, `concise ${1 - reply.length / 500} - ${reply.length} characters: ${1 - reply.length / 500}`]);
});

test('README: workflows (the streaming overview\'s example)', T, async () => {
  const console = capture();

  // README:workflows
  // import { createStep, createWorkflow } from 'wasm-agent'
  // import { z } from 'zod'

  const inputSchema = z.object({ value: z.string() })
  const outputSchema = z.object({ value: z.string() })
  const step1 = createStep({
    id: 'step-1',
    inputSchema,
    outputSchema,
    execute: async ({ inputData, writer }) => {
      await writer.write({ type: 'custom-event', status: 'pending' })
      return { value: inputData.value.toUpperCase() }
    },
  })
  const testWorkflow = createWorkflow({ id: 'test-workflow', inputSchema, outputSchema }).then(step1).commit()

  const run = await testWorkflow.createRun()
  const stream = await run.stream({ inputData: { value: 'initial data' } })
  for await (const chunk of stream) console.log(chunk.type)
  console.log(stream.status, (await stream.result).result)
  // END

  assert.deepEqual(console.lines, ['workflow-start', 'workflow-step-start', 'workflow-step-output', 'workflow-step-result', 'workflow-finish', "success { value: 'INITIAL DATA' }"]);
});

test('README: an agent calling a workflow that suspends', T, async () => {
  const console = capture();
  const MODEL_URL = server.current.url;

  // README:workflow-suspend
  // import { Agent, createStep, createWorkflow } from 'wasm-agent'

  const order = { type: 'object', properties: { orderId: { type: 'number' } }, required: ['orderId'] }
  const approve = createStep({
    id: 'approve',
    inputSchema: order,
    resumeSchema: { type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] },
    execute: async ({ inputData, resumeData, suspend }) => {
      if (!resumeData) return suspend({ ask: `Refund order ${inputData.orderId}?` })
      return { orderId: inputData.orderId, decision: resumeData }
    },
  })
  const refund = createWorkflow({ id: 'refund', inputSchema: order }).then(approve).commit()
  const agent = new Agent({ id: 'support', instructions: 'Refund orders when asked.', model: { id: 'openai/tool-call', url: MODEL_URL, apiKey: 'local' }, workflows: { refund } }) // README: model: 'openai/gpt-4o-mini', workflows: { refund } })

  const out = await agent.stream('Refund order 42', { closeOnSuspend: true })
  for await (const chunk of out.fullStream) if (chunk.type === 'tool-call-suspended') console.log(chunk.payload.suspendPayload)
  // { workflow: 'refund', runId: '…', suspended: [ [ 'approve' ] ], payload: { ask: 'Refund order 42?' } }
  console.log(await out.finishReason) // 'suspended'

  // Later, in this page or after a reload: the user said yes.
  const resumed = await agent.resumeStream({ approved: true }, { runId: out.runId })
  console.log(await resumed.text)
  // END

  // The local model makes its own arguments from the schema (orderId 21.5) and repeats the tool's answer.
  const { runs } = await refund.listWorkflowRuns();
  const { runId } = runs[0];
  assert.deepEqual(console.lines, [
    format({ workflow: 'refund', runId, suspended: [['approve']], payload: { ask: 'Refund order 21.5?' } }),
    'suspended',
    `The tool said: ${JSON.stringify({ result: { orderId: 21.5, decision: { approved: true } }, runId })}`,
  ]);
  assert.equal(runs.length, 1, 'the resume went on with the same workflow run');
});

noUnhandledRejections();
