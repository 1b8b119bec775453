// A module Worker for until-idle.test.mjs: an agent with a background `research` tool streams
// `agent.stream(prompt, { untilIdle: true, memory })` as Server-Sent Events, so the first turn,
// the background task and the continuation turn all arrive in one response of one request.
//
//   POST /  { "prompt": "…", "thread": "…", "resource": "…", "ms": 300 }   → text/event-stream
//
// env: MODEL_URL (the local model server's /v1 base URL), MODEL_API_KEY.

import { Agent, InMemoryStore, Memory, createTool } from '../../pkg/index.workerd.js';

const encoder = new TextEncoder();

/** Object chunks → SSE bytes. Ends with `data: [DONE]`. */
function sseEncoder() {
  return new TransformStream({
    transform(chunk, controller) {
      controller.enqueue(encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`));
    },
    flush(controller) {
      controller.enqueue(encoder.encode('data: [DONE]\n\n'));
    },
  });
}

export default {
  async fetch(request, env) {
    if (request.method !== 'POST') return new Response('POST a JSON body { prompt, thread, resource }', { status: 405 });
    const body = await request.json();
    const ms = typeof body?.ms === 'number' ? body.ms : 300;

    let out;
    try {
      const research = createTool({
        id: 'research',
        description: 'Research a topic in depth (takes a while)',
        inputSchema: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
        background: { enabled: true, timeoutMs: 10_000 },
        execute: async ({ topic }) => {
          await new Promise((resolve) => setTimeout(resolve, ms));
          return { topic, summary: `${topic} is a fast blockchain (researched in workerd)` };
        },
      });
      const agent = new Agent({
        id: 'until-idle-agent',
        instructions: 'You are a helpful assistant.',
        // The model server's `background:<tool>:<json args>` script: calls research, acknowledges
        // the placeholder, then answers the continuation with the task's result.
        model: { id: 'openai/background:research:{"topic":"solana"}', url: env.MODEL_URL, apiKey: env.MODEL_API_KEY, api: 'chat' },
        maxRetries: 0,
        tools: { research },
        memory: new Memory({ storage: new InMemoryStore() }),
        backgroundTasks: { enabled: true },
      });
      out = await agent.stream(body?.prompt ?? 'research solana', {
        untilIdle: true,
        memory: { thread: body?.thread ?? 't1', resource: body?.resource ?? 'u1' },
      });
    } catch (err) {
      return Response.json({ error: { name: err?.name ?? 'Error', message: String(err?.message ?? err) } }, { status: 500 });
    }

    return new Response(out.fullStream.pipeThrough(sseEncoder()), {
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' },
    });
  },
};
