// A module Worker that streams an agent reply as Server-Sent Events. It is run by
// worker.test.mjs in real workerd (through Miniflare), importing the built package from pkg/
// exactly as a Worker bundle would (the package's `workerd` entry).
//
//   POST /  { "prompt": "…", "script": "slow:150" }   → text/event-stream, one `data: <chunk>` per chunk
//   POST /  { "modelId": "groq/…" }                    → the model id as given, with no key: new Agent's error
//
// env: MODEL_URL (the local model server's /v1 base URL), MODEL_API_KEY.

import { Agent } from '../../pkg/index.workerd.js';

const encoder = new TextEncoder();

/** Object chunks → SSE bytes (a Response body must be bytes). Ends with `data: [DONE]`. */
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

function errorResponse(status, err) {
  return Response.json({ error: { name: err?.name ?? 'Error', message: String(err?.message ?? err) } }, { status });
}

export default {
  async fetch(request, env) {
    if (request.method !== 'POST') return new Response('POST a JSON body { prompt, script }', { status: 405 });
    let body;
    try {
      body = await request.json();
    } catch (err) {
      return errorResponse(400, err);
    }
    const script = typeof body?.script === 'string' ? body.script : 'echo';
    const prompt = body?.prompt ?? 'Hello';

    let out;
    try {
      const agent = new Agent({
        id: 'edge-agent',
        instructions: 'You are a helpful assistant.',
        model: typeof body?.modelId === 'string' ? body.modelId : { id: `openai/${script}`, url: env.MODEL_URL, apiKey: env.MODEL_API_KEY, api: 'chat' },
      });
      out = await agent.stream(prompt);
    } catch (err) {
      // Construction/option errors are thrown synchronously (TypeError); run failures arrive as
      // `error` chunks in the stream instead.
      return errorResponse(500, err);
    }

    return new Response(out.fullStream.pipeThrough(sseEncoder()), {
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
      },
    });
  },
};
