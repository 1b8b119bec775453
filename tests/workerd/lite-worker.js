// A module Worker on wasm-agent/lite (pkg/lite/index.workerd.js, its own compiled wasm module),
// run by lite.test.mjs in real workerd (through Miniflare).
//
//   POST /  { "prompt": "…", "api": "chat" | "responses" }   → { text } (generate()'s text)
//   POST /  { "prompt": "…", "structured": true }            → { error: { name, message } }
//
// env: MODEL_URL (the local model server's /v1 base URL).

import { Agent } from '../../pkg/lite/index.workerd.js';

export default {
  async fetch(request, env) {
    const body = await request.json();
    const agent = new Agent({
      id: 'lite-edge',
      model: { id: 'openai/echo', url: env.MODEL_URL, apiKey: 'offline', api: body.api ?? 'chat' },
    });
    try {
      const options = body.structured ? { structuredOutput: { schema: { type: 'object' } } } : {};
      const result = await agent.generate(body.prompt, options);
      return Response.json({ text: result.text });
    } catch (err) {
      return Response.json({ error: { name: err?.name, message: String(err?.message ?? err) } });
    }
  },
};
