// Writers for the local model server: one exchange (request + response + its record), the base
// every responder shares (buffering, flushing, pacing, delta counts) and the Chat Completions
// responder that speaks OpenAI's streaming format (or a plain chat.completion when the request did
// not ask to stream). Used by model-server.mjs, scripts.mjs and responses-stream.mjs.

import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Random [A-Za-z0-9] string, like the suffixes of OpenAI ids. */
export function randomId(length) {
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i] % ALPHABET.length];
  return out;
}

/** Thrown (and swallowed by the server) when the exchange was cut short: client gone, server closing. */
export class Halt extends Error {
  constructor(reason = 'exchange halted') {
    super(reason);
    this.name = 'Halt';
  }
}

/** Text of a message `content`: a string, or an array of parts of which the text parts count. */
export function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === 'string' ? part : typeof part?.text === 'string' ? part.text : ''))
      .filter((text) => text !== '')
      .join('\n');
  }
  if (content == null) return '';
  return JSON.stringify(content);
}

/** Word-sized pieces, each carrying the whitespace before it: "Hello there" → ["Hello", " there"]. */
export function words(text) {
  return String(text).match(/\s*\S+|\s+$/g) ?? [];
}

/** Rough prompt size: characters of all messages (text, tool call names and arguments) / 4. */
export function estimatePromptTokens(body) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  let chars = typeof body?.system === 'string' ? body.system.length : 0;
  for (const message of messages) {
    chars += textOf(message?.content).length;
    for (const call of Array.isArray(message?.tool_calls) ? message.tool_calls : []) {
      chars += String(call?.function?.name ?? '').length + String(call?.function?.arguments ?? '').length;
    }
  }
  return Math.max(1, Math.ceil(chars / 4));
}

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

/**
 * One HTTP exchange as a script sees it. `signal` aborts when the client goes away or the server
 * closes; every wait (sleep, hold, drain) rejects then, and the server swallows that rejection.
 */
export class Exchange {
  /**
   * `body` is what scripts read: the request in Chat Completions form (`messages`, `tools`), which
   * for another API is a translation of what arrived (the record keeps the real body).
   * `Responder` is the class `chat()` makes: it writes the reply in the wire format of the request.
   */
  constructor({ req, res, body, selector, name, arg, record, onChange, serverOptions, Responder = ChatResponder }) {
    Object.assign(this, { req, res, body, selector, name, arg, record, serverOptions, Responder });
    this.headers = record.headers;
    this.onChange = onChange;
    this.controller = new AbortController();
    this.signal = this.controller.signal;
    this.ended = false; // the server called end() on the response
    this.destroyedByServer = false; // the server cut the connection on purpose
    this.requestId = 'req_' + randomId(24);
    this._chat = null;
    this._promptTokens = undefined;
  }

  /** Whether the client asked for a stream (`stream: true`). */
  get streaming() {
    return this.body?.stream === true;
  }

  get promptTokens() {
    return (this._promptTokens ??= estimatePromptTokens(this.body));
  }

  /**
   * The responder for this exchange (created once): Chat Completions output, or the output of the
   * API the request came in on, behind the same methods.
   */
  chat() {
    return (this._chat ??= new this.Responder(this));
  }

  abort(reason) {
    if (!this.signal.aborted) this.controller.abort(new Halt(reason));
  }

  /** Resolves after `ms`; rejects as soon as the exchange is halted. */
  async sleep(ms) {
    if (this.signal.aborted) throw new Halt();
    try {
      await delay(ms, undefined, { signal: this.signal });
    } catch {
      throw new Halt();
    }
  }

  /** Never resolves: waits until the client disconnects or the server closes, then rejects. */
  hold() {
    return new Promise((_, reject) => {
      if (this.signal.aborted) return reject(new Halt());
      this.signal.addEventListener('abort', () => reject(new Halt()), { once: true });
    });
  }

  markEnded() {
    this.ended = true;
    this.record.finished = true;
    this.onChange();
  }

  /** A complete JSON response. */
  json(status, value, headers = {}) {
    if (this.signal.aborted) throw new Halt();
    const text = JSON.stringify(value);
    this.markEnded();
    this.res.writeHead(status, {
      'content-type': 'application/json',
      'x-request-id': this.requestId,
      ...headers,
    });
    this.res.end(text);
  }

  /** An OpenAI-style error response: `{ error: { message, type, code } }`. */
  error(status, error, headers = {}) {
    this.json(status, { error }, headers);
  }

  /** Cuts the connection. `reset: true` sends a TCP RST instead of a FIN. */
  destroy({ reset = false } = {}) {
    this.destroyedByServer = true;
    const socket = this.req.socket;
    if (reset && typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
    else socket.destroy();
    this.abort('destroyed by the server');
  }

  /** Starts an event stream (status 200, text/event-stream) if not started yet. */
  startEventStream(headers = {}) {
    if (this.signal.aborted) throw new Halt();
    if (!this.res.headersSent) {
      this.res.writeHead(200, { ...SSE_HEADERS, 'x-request-id': this.requestId, ...headers });
    }
  }

  /**
   * Writes raw text to the response. Resolves at once unless the socket buffer is full (then on
   * 'drain'); with `flushed: true`, resolves once the bytes were handed to the OS.
   */
  async write(text, { flushed = false } = {}) {
    if (this.signal.aborted) throw new Halt();
    this.startEventStream();
    if (text === '') {
      this.res.flushHeaders();
      return;
    }
    if (flushed) {
      await new Promise((resolve) => this.res.write(text, () => resolve()));
    } else if (!this.res.write(text)) {
      try {
        await once(this.res, 'drain', { signal: this.signal });
      } catch {
        throw new Halt();
      }
    }
    if (this.signal.aborted) throw new Halt();
  }

  /** Ends an event stream normally. */
  end(text = '') {
    if (this.signal.aborted) throw new Halt();
    this.startEventStream();
    this.markEnded();
    this.res.end(text);
  }
}

export const FLUSH_AT = 64 * 1024;

/**
 * What every responder shares: the model name, the output buffer and its flushing, pacing, and
 * the count of completion "tokens" (every content, reasoning or tool call delta). Subclasses
 * write one wire format: `role()`, `content()`, `reasoning()`, `toolCall()`, `delta()`,
 * `usage()`, `fail()`, `complete()` and `completion()`.
 */
export class Responder {
  constructor(exchange) {
    this.ex = exchange;
    const body = exchange.body;
    this.streaming = exchange.streaming;
    this.created = Math.floor(Date.now() / 1000);
    this.model = typeof body?.model === 'string' && body.model !== '' ? body.model : exchange.selector;
    this.buf = '';
    this.deltas = 0;
    this.reasoningDeltas = 0;
  }

  /** Raw SSE text, streamed as is (ignored when not streaming). */
  raw(text) {
    if (this.streaming) this.buf += text;
  }

  /** Writes what is buffered. Cheap to call often; `flushed` waits until the OS has the bytes. */
  async flush({ flushed = false } = {}) {
    if (!this.streaming) {
      if (this.ex.signal.aborted) throw new Halt();
      return;
    }
    const text = this.buf;
    this.buf = '';
    await this.ex.write(text, { flushed });
  }

  /** Flushes when the buffer is big; call it inside tight loops. */
  async maybeFlush() {
    if (this.buf.length >= FLUSH_AT) await this.flush();
  }

  /** Streaming: flush, then wait `ms`. Not streaming: no wait (there is nobody to pace for). */
  async pause(ms) {
    if (!this.streaming) return;
    await this.flush();
    if (ms > 0) await this.ex.sleep(ms);
  }

  /** Ends the stream with what is buffered plus `text`. */
  endWith(text) {
    const all = this.buf + text;
    this.buf = '';
    this.ex.end(all);
  }
}

/**
 * Builds OpenAI Chat Completions output. Streaming: every call appends `data: {chunk}\n\n` to a
 * buffer that `flush()` writes in one go (so thousands of events cost a handful of socket writes).
 * Not streaming: the same calls accumulate one `chat.completion` object that `complete()` sends.
 */
export class ChatResponder extends Responder {
  constructor(exchange) {
    super(exchange);
    this.includeUsage = this.streaming && exchange.body?.stream_options?.include_usage === true;
    this.id = 'chatcmpl-' + randomId(29);
    const usageNull = this.includeUsage ? ',"usage":null' : '';
    this.head = `{"id":"${this.id}","object":"chat.completion.chunk","created":${this.created},"model":${JSON.stringify(this.model)},"choices":[`;
    this.deltaHead = `data: ${this.head}{"index":0,"delta":`;
    this.deltaTail = `,"finish_reason":null}]${usageNull}}\n\n`;
    this.usageNull = usageNull;
    this.roleSent = false;
    // Non-streaming accumulation.
    this.text = '';
    this.reasoningText = '';
    this.toolCalls = [];
  }

  /** Appends one chunk whose delta is the JSON text `deltaJson`. */
  rawDelta(deltaJson, counted = true) {
    if (counted) this.deltas++;
    if (this.streaming) this.buf += this.deltaHead + deltaJson + this.deltaTail;
  }

  /** Appends one chunk with `delta` (an object). */
  delta(delta, counted = true) {
    if (this.streaming) {
      this.rawDelta(JSON.stringify(delta), counted);
      return;
    }
    if (counted) this.deltas++;
    if (typeof delta.content === 'string') this.text += delta.content;
    if (typeof delta.reasoning_content === 'string') this.reasoningText += delta.reasoning_content;
    for (const piece of delta.tool_calls ?? []) {
      const call = (this.toolCalls[piece.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (piece.id) call.id = piece.id;
      if (piece.function?.name) call.function.name += piece.function.name;
      if (piece.function?.arguments) call.function.arguments += piece.function.arguments;
    }
  }

  /** First chunk: `{ role: 'assistant', content: '' }` (sent once). */
  role() {
    if (this.roleSent) return;
    this.roleSent = true;
    this.rawDelta('{"role":"assistant","content":""}', false);
  }

  content(text) {
    this.role();
    // The hot path of long streams: no object to stringify, only the text.
    if (this.streaming) this.rawDelta('{"content":' + JSON.stringify(text) + '}');
    else this.delta({ content: text });
  }

  reasoning(text) {
    this.role();
    this.reasoningDeltas++;
    this.delta({ reasoning_content: text });
  }

  /** One entry of `delta.tool_calls` (its own chunk). */
  toolCall(piece) {
    this.role();
    this.delta({ tool_calls: [piece] });
  }

  usage() {
    const prompt = this.ex.promptTokens;
    return {
      prompt_tokens: prompt,
      completion_tokens: this.deltas,
      total_tokens: prompt + this.deltas,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: this.reasoningDeltas },
    };
  }

  /** Ends the stream with an error mid-way, as OpenAI does: `data: {"error": …}`, then [DONE]. */
  fail(error) {
    this.endWith(`data: ${JSON.stringify({ error })}\n\ndata: [DONE]\n\n`);
  }

  /** Final chunk with `finish_reason`, the usage chunk when asked for, `[DONE]`; or the JSON reply. */
  async complete(finishReason = 'stop') {
    this.role();
    if (!this.streaming) {
      this.ex.json(200, this.completion(finishReason));
      return;
    }
    this.buf += `data: ${this.head}{"index":0,"delta":{},"finish_reason":${JSON.stringify(finishReason)}}]${this.usageNull}}\n\n`;
    if (this.includeUsage) this.buf += `data: ${this.head}],"usage":${JSON.stringify(this.usage())}}\n\n`;
    this.endWith('data: [DONE]\n\n');
  }

  /** The whole reply as one non-streaming `chat.completion` object. */
  completion(finishReason) {
    const toolCalls = this.toolCalls.filter(Boolean);
    const message = { role: 'assistant', content: this.text === '' && toolCalls.length ? null : this.text };
    if (this.reasoningText) message.reasoning_content = this.reasoningText;
    if (toolCalls.length) message.tool_calls = toolCalls;
    message.refusal = null;
    return {
      id: this.id,
      object: 'chat.completion',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }],
      usage: this.usage(),
    };
  }
}
