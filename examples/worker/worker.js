// A chat Worker whose conversations live in Durable Objects: one `Conversation` object per
// thread owns that thread's memory in its own storage.
//
//   POST /chat                 { "thread": "t1", "message": "Hello" } → text/event-stream
//                              (one `data: <chunk JSON>` event per agent chunk, then `data: [DONE]`)
//   POST /api/chat             what AI SDK 5's useChat sends ({ id: thread, messages }) → the AI SDK
//                              UI message stream (toAISdkStream) useChat reads
//   GET  /history?thread=t1    → the thread's messages as UI messages (JSON)
//   DELETE /history?thread=t1  → deletes the thread and its messages
//
// env: MODEL_ID (e.g. "openai/gpt-4o-mini"), MODEL_URL (optional base URL), MODEL_API_KEY (a
// secret); binding CONVERSATION → the Conversation class.

import { Agent, Memory, toAISdkStream } from 'wasm-agent';
import { DurableObjectStore } from 'wasm-agent/durable-object-store';

/**
 * @typedef {object} Env
 * @property {DurableObjectNamespace} CONVERSATION
 * @property {string} MODEL_ID
 * @property {string} [MODEL_URL]
 * @property {string} MODEL_API_KEY
 */

const RESOURCE = 'user'; // one user here; with sign-in, the user's id

export default {
  /**
   * Routes each request to the Durable Object of its thread.
   * @param {Request} request
   * @param {Env} env
   */
  async fetch(request, env) {
    const url = new URL(request.url);
    let thread = url.searchParams.get('thread');
    if (request.method === 'POST') {
      try {
        const body = await request.clone().json();
        thread = body?.thread ?? body?.id ?? thread; // /chat names it `thread`, useChat `id`
      } catch {
        return error(400, 'POST a JSON body { thread, message }');
      }
    }
    if (typeof thread !== 'string' || thread === '') return error(400, 'name a thread: { thread } in the body, or ?thread=');
    const stub = env.CONVERSATION.get(env.CONVERSATION.idFromName(thread));
    return stub.fetch(request);
  },
};

/** One conversation thread: its messages are kept in this object's storage. */
export class Conversation {
  /**
   * @param {DurableObjectState} state
   * @param {Env} env
   */
  constructor(state, env) {
    this.state = state;
    this.env = env;
    this.memory = new Memory({ storage: new DurableObjectStore(this.state.storage) });
    /** @type {Agent | undefined} made by agent() */
    this._agent; // a declaration for the type checker only
  }

  /** The agent, made on first use (a missing MODEL_ID then answers 500 instead of breaking the object). */
  agent() {
    this._agent ??= new Agent({
      id: 'chat',
      instructions: 'You are a helpful assistant.',
      model: { id: this.env.MODEL_ID, url: this.env.MODEL_URL || undefined, apiKey: this.env.MODEL_API_KEY },
      memory: this.memory,
    });
    return this._agent;
  }

  /** @param {Request} request */
  async fetch(request) {
    const url = new URL(request.url);
    if (request.method === 'POST' && url.pathname === '/chat') {
      const { thread, message } = await request.json();
      return this.reply(thread, message, (out) => out.fullStream);
    }
    if (request.method === 'POST' && url.pathname === '/api/chat') {
      // useChat sends the whole conversation; the history is already here, so only the last
      // (user) message is new.
      const { id, messages } = await request.json();
      const last = Array.isArray(messages) ? messages.at(-1) : undefined;
      const text = last?.role === 'user' ? (last.parts ?? []).filter((p) => p.type === 'text').map((p) => p.text).join('') : '';
      return this.reply(id, text, (out) => toAISdkStream(out, { from: 'agent' }), { 'x-vercel-ai-ui-message-stream': 'v1' });
    }
    if (url.pathname === '/history') {
      // The Worker's fetch above sends only requests that name a thread (?thread= here).
      const threadId = /** @type {string} */ (url.searchParams.get('thread'));
      if (request.method === 'GET') return Response.json(await this.memory.listMessages({ threadId, format: 'ui' }));
      if (request.method === 'DELETE') {
        await this.memory.deleteThread({ threadId });
        return new Response(null, { status: 204 });
      }
    }
    return error(404, `no route ${request.method} ${url.pathname}`);
  }

  /** Runs the agent on the thread and streams `pick(output)` back as SSE. */
  async reply(thread, message, pick, headers = {}) {
    if (typeof message !== 'string' || message === '') return error(400, 'the message must be non-empty text');
    let out;
    try {
      out = await this.agent().stream(message, { memory: { thread, resource: RESOURCE } });
    } catch (err) {
      return error(500, err); // a config or option error; a failed model call arrives in the stream
    }
    return new Response(pick(out).pipeThrough(sse()), {
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', ...headers },
    });
  }
}

const encoder = new TextEncoder();

/**
 * Agent chunks (objects) → SSE bytes: a Response body must be bytes. step-start and step-finish
 * carry the model request's body (the instructions and the whole history sent to the model):
 * dropped here, the browser has no use for it.
 */
function sse() {
  return new TransformStream({
    transform(chunk, controller) {
      if (chunk.payload?.request) delete chunk.payload.request;
      if (chunk.payload?.metadata?.request) delete chunk.payload.metadata.request;
      controller.enqueue(encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`));
    },
    flush(controller) {
      controller.enqueue(encoder.encode('data: [DONE]\n\n'));
    },
  });
}

function error(status, err) {
  const message = typeof err === 'string' ? err : String(err?.message ?? err);
  return Response.json({ error: { name: err?.name ?? 'Error', message } }, { status });
}
