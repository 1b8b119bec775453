// A module Worker for websocket.test.mjs: one agent call whose model calls go on the Responses
// WebSocket transport, answered as JSON (the chunk types, the text, the error if any).
//
//   POST /  { "script": "…", "prompt": "…", "provider": "openai" | "azure", "transport": "websocket",
//             "url": "ws://…" (optional), "closeOnFinish": true, "tool": false }   → { types, text, error }
//
// env: MODEL_URL (the local model server's /v1 base URL), MODEL_API_KEY.

import { Agent, createTool } from '../../pkg/index.workerd.js';

export default {
  async fetch(request, env) {
    const body = await request.json();
    const provider = body.provider ?? 'openai';
    const weather = createTool({
      id: 'weather',
      description: 'Current weather for a city',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      execute: async ({ city }) => ({ city, forecast: 'sunny' }),
    });
    const agent = new Agent({
      id: 'ws-worker-agent',
      model: { id: `${provider}/${body.script}`, url: env.MODEL_URL, apiKey: env.MODEL_API_KEY, api: 'responses' },
      maxRetries: 0,
      tools: body.tool ? { weather } : {},
    });
    const out = await agent.stream(body.prompt ?? 'hi', {
      providerOptions: {
        [provider]: { transport: body.transport ?? 'websocket', websocket: { url: body.url, closeOnFinish: body.closeOnFinish ?? true } },
      },
    });
    const types = [];
    let error = null;
    for await (const chunk of out.fullStream) {
      types.push(chunk.type);
      if (chunk.type === 'error') error = chunk.payload.error.message;
    }
    const text = error ? null : await out.text;
    if (body.closeOnFinish === false) out.transport.close();
    return Response.json({ types, text, error, transport: out.transport?.type ?? null });
  },
};
