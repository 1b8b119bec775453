// The OpenAI Responses API (POST …/responses) for the local model server's scripts, which are
// written against Chat Completions: `chatView()` turns a Responses request body into the Chat form
// scripts read (`messages`, `tools`), and `ResponsesResponder` writes what scripts say through the
// ChatResponder methods as Responses output: the streamed events (`event: <type>` + `data:` with a
// `sequence_number`), or one `response` object when the request did not ask to stream.
//
// Shapes and order follow recorded OpenAI and xAI streams (shared/fixtures/provider-streams).

import { Responder, randomId } from './chat-stream.mjs';

// ---------------------------------------------------------------------------------------------
// Request: items that refer to earlier responses

/**
 * What the API says of `input` items that refer to items of earlier responses (by `id`), as
 * [status, message], or null: an unknown id is not found; a reasoning item needs its `summary`,
 * its encrypted content when nothing is stored (`store: false`), and the item that followed it
 * right after it; an item that followed reasoning needs that reasoning right before it.
 * `known`: the items this server sent (ResponsesResponder.remember).
 */
export function responsesInputProblem(body, known = new Map()) {
  const items = Array.isArray(body?.input) ? body.input : [];
  const stateless = body?.store === false;
  for (const [i, item] of items.entries()) {
    if (typeof item?.id !== 'string') continue;
    const type = item.type ?? (item.role ? 'message' : undefined);
    const sent = known.get(item.id);
    if (!sent || sent.type !== type) return [404, `Item with id '${item.id}' not found.`];
    if (type === 'reasoning') {
      if (!Array.isArray(item.summary)) return [400, `Missing required parameter: 'input[${i}].summary'.`];
      if (stateless && item.encrypted_content !== sent.encrypted) {
        return [404, `Item with id '${item.id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`];
      }
      if (sent.next && items[i + 1]?.id !== sent.next) {
        return [400, `Item '${item.id}' of type 'reasoning' was provided without its required following item.`];
      }
    } else if (sent.reasoning && items[i - 1]?.id !== sent.reasoning) {
      return [400, `Item '${item.id}' of type '${type}' was provided without its required 'reasoning' item: '${sent.reasoning}'.`];
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Request: the Chat view of a Responses body

/** A Responses content part as the Chat part that says the same (unknown parts pass as they are). */
function chatPart(part) {
  switch (part?.type) {
    case 'input_text':
    case 'output_text':
    case 'text':
      return { type: 'text', text: part.text };
    case 'input_image':
      return { type: 'image_url', image_url: { url: part.image_url ?? part.file_id, ...(part.detail ? { detail: part.detail } : {}) } };
    case 'input_file': {
      const { type: _, ...file } = part;
      return { type: 'file', file };
    }
    default:
      return part;
  }
}

const chatContent = (content) => (Array.isArray(content) ? content.map(chatPart) : content);

/** A tool result's `output`: text stays text, parts become Chat parts, anything else JSON. */
function chatToolOutput(output) {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return output.map(chatPart);
  return JSON.stringify(output ?? '');
}

/** The `input` items as Chat messages (`instructions`, when given, first as a system message). */
function chatMessages(body) {
  const messages = [];
  if (typeof body.instructions === 'string' && body.instructions !== '') {
    messages.push({ role: 'system', content: body.instructions });
  }
  const items = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : Array.isArray(body.input) ? body.input : [];
  for (const item of items) {
    const type = item?.type ?? (item?.role ? 'message' : undefined);
    if (type === 'message') {
      messages.push({ role: item.role, content: chatContent(item.content) });
    } else if (type === 'function_call') {
      const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments ?? '' } };
      // Calls that follow assistant text (or each other) are that turn's calls, as in Chat.
      const last = messages.at(-1);
      if (last?.role === 'assistant') (last.tool_calls ??= []).push(call);
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (type === 'function_call_output') {
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: chatToolOutput(item.output) });
    }
    // `reasoning` items (and item references) say nothing a script reads.
  }
  return messages;
}

/** A Responses tool as a Chat tool: function tools get the `function` wrapper, others pass. */
function chatTool(tool) {
  if (tool?.type !== 'function') return tool;
  const { type, ...fn } = tool;
  return { type, function: fn };
}

/**
 * The Chat Completions form of a Responses request body, for scripts: `instructions` and `input`
 * become `messages`, function tools and a named `tool_choice` get Chat's `function` wrapper,
 * `max_output_tokens` becomes `max_tokens`; the other fields (`model`, `stream`, …) stay. A body
 * that is not an object is returned as it is.
 */
export function chatView(body) {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const { input: _input, instructions: _instructions, tools, tool_choice, max_output_tokens, ...rest } = body;
  const view = { ...rest, messages: chatMessages(body) };
  if (Array.isArray(tools)) view.tools = tools.map(chatTool);
  if (tool_choice !== undefined) {
    view.tool_choice = tool_choice?.type === 'function' ? { type: 'function', function: { name: tool_choice.name } } : tool_choice;
  }
  if (max_output_tokens !== undefined) view.max_tokens = max_output_tokens;
  return view;
}

/** Whether a request path is the Responses API's. */
export const isResponsesPath = (pathname) => /\/responses$/i.test(pathname ?? '');

// ---------------------------------------------------------------------------------------------
// Response

const itemId = (prefix) => `${prefix}_${randomId(48)}`;

/** Why a Chat finish reason leaves a response incomplete (undefined: it completed). */
const INCOMPLETE = { length: 'max_output_tokens', content_filter: 'content_filter' };

/**
 * Builds Responses API output from the ChatResponder calls. Each run of text is one `message`
 * item, each run of reasoning one `reasoning` item with one summary part, each tool call one
 * `function_call` item (its `call_id` the Chat tool call id). Streaming, the events go to the
 * shared buffer as they come, except a run of tool calls: Chat sends no "this call is complete",
 * so its events are held until the run ends (or the script flushes), and each call's `.done`
 * events then follow its last piece: calls sent one after the other come out one after the other,
 * fragments that alternate between calls stay interleaved (each event names its `output_index`).
 */
export class ResponsesResponder extends Responder {
  constructor(exchange) {
    super(exchange);
    this.id = itemId('resp');
    this.seq = 0;
    this.started = false;
    this.items = []; // output items in output order: { type, id, status, … }
    this.open = null; // the message or reasoning item being written
    this.run = null; // tool calls being written: { calls: Map(chat index → item), held: [event] }
    const wire = exchange.record?.body; // the request as sent, for the fields a response repeats
    this.request = wire !== null && typeof wire === 'object' ? wire : {};
  }

  /** Appends one event (streaming only); the sequence number is given here, in write order. */
  emit(type, fields) {
    if (this.streaming) this.buf += `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.seq++, ...fields })}\n\n`;
  }

  /** The response object, as `response.created` and the final event carry it. */
  response(status, extra = {}) {
    const r = this.request;
    return {
      id: this.id,
      object: 'response',
      created_at: this.created,
      status,
      error: null,
      incomplete_details: null,
      instructions: r.instructions ?? null,
      max_output_tokens: r.max_output_tokens ?? null,
      model: this.model,
      output: [],
      parallel_tool_calls: r.parallel_tool_calls ?? true,
      previous_response_id: r.previous_response_id ?? null,
      reasoning: { effort: r.reasoning?.effort ?? null, summary: r.reasoning?.summary ?? null },
      store: r.store ?? true,
      temperature: r.temperature ?? 1,
      text: r.text ?? { format: { type: 'text' } },
      tool_choice: r.tool_choice ?? 'auto',
      tools: Array.isArray(r.tools) ? r.tools : [],
      top_p: r.top_p ?? 1,
      usage: null,
      metadata: r.metadata ?? {},
      ...extra,
    };
  }

  /** `response.created` and `response.in_progress` (sent once, before anything else). */
  role() {
    if (this.started) return;
    this.started = true;
    const response = this.response('in_progress');
    this.emit('response.created', { response });
    this.emit('response.in_progress', { response });
  }

  /** A new output item of `type`; `response.output_item.added` says so. */
  addItem(type, fields) {
    const item = { type, id: itemId(type === 'message' ? 'msg' : type === 'reasoning' ? 'rs' : 'fc'), status: 'in_progress', index: this.items.length, ...fields };
    this.items.push(item);
    return item;
  }

  /** An item as the API shows it: when added (`done` false, empty) or finished. */
  wireItem(item, done = true) {
    const status = done ? item.status : 'in_progress';
    switch (item.type) {
      case 'message':
        return { id: item.id, type: 'message', status, content: done ? [this.textPart(item.text)] : [], role: 'assistant' };
      case 'reasoning': {
        const wire = { id: item.id, type: 'reasoning', summary: done ? [{ type: 'summary_text', text: item.text }] : [] };
        if (this.wantsEncryptedReasoning()) wire.encrypted_content = item.encrypted;
        return wire;
      }
      default:
        return { id: item.id, type: 'function_call', status, arguments: done ? item.arguments : '', call_id: item.call_id, name: item.name };
    }
  }

  textPart(text) {
    return { type: 'output_text', annotations: [], logprobs: [], text };
  }

  wantsEncryptedReasoning() {
    return Array.isArray(this.request.include) && this.request.include.includes('reasoning.encrypted_content');
  }

  /** The open message or reasoning item of `type`, opening it (and closing what was open) if need be. */
  openItem(type) {
    if (this.open?.type === type) return this.open;
    this.endRun();
    this.closeOpen();
    const item = (this.open = this.addItem(type, type === 'reasoning' ? { text: '', encrypted: 'gAAAAA' + randomId(64) } : { text: '' }));
    const at = { item_id: item.id, output_index: item.index };
    this.emit('response.output_item.added', { output_index: item.index, item: this.wireItem(item, false) });
    if (type === 'message') {
      this.emit('response.content_part.added', { ...at, content_index: 0, part: this.textPart('') });
      // Every text delta starts with the same fields: built once.
      item.deltaHead = `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":`;
      item.deltaFields = `,"item_id":"${item.id}","output_index":${item.index},"content_index":0,"delta":`;
    } else {
      this.emit('response.reasoning_summary_part.added', { ...at, summary_index: 0, part: { type: 'summary_text', text: '' } });
    }
    return item;
  }

  /** Finishes the open message or reasoning item with its `.done` events. */
  closeOpen(status = 'completed') {
    const item = this.open;
    if (!item) return;
    this.open = null;
    item.status = status;
    const at = { item_id: item.id, output_index: item.index };
    if (item.type === 'message') {
      this.emit('response.output_text.done', { ...at, content_index: 0, text: item.text, logprobs: [] });
      this.emit('response.content_part.done', { ...at, content_index: 0, part: this.textPart(item.text) });
    } else {
      this.emit('response.reasoning_summary_text.done', { ...at, summary_index: 0, text: item.text });
      this.emit('response.reasoning_summary_part.done', { ...at, summary_index: 0, part: { type: 'summary_text', text: item.text } });
    }
    this.emit('response.output_item.done', { output_index: item.index, item: this.wireItem(item) });
  }

  content(text) {
    this.role();
    this.deltas++;
    const item = this.openItem('message');
    item.text += text;
    if (this.streaming) {
      this.buf += item.deltaHead + this.seq++ + item.deltaFields + JSON.stringify(text) + ',"logprobs":[]}\n\n';
    }
  }

  reasoning(text) {
    this.role();
    this.deltas++;
    this.reasoningDeltas++;
    const item = this.openItem('reasoning');
    item.text += text;
    this.emit('response.reasoning_summary_text.delta', { item_id: item.id, output_index: item.index, summary_index: 0, delta: text });
  }

  /**
   * One Chat `delta.tool_calls[]` entry. The first piece of an index opens a `function_call` item
   * with its id and name; argument fragments become `function_call_arguments.delta` events. (The
   * API has no way to stream a name: a name split across pieces is whole only in the `.done` item.)
   */
  toolCall(piece) {
    this.role();
    this.deltas++;
    this.closeOpen();
    this.run ??= { calls: new Map(), held: [] };
    let call = this.run.calls.get(piece.index);
    if (!call) {
      call = this.addItem('function_call', { call_id: piece.id || 'call_' + randomId(24), name: piece.function?.name ?? '', arguments: '' });
      this.run.calls.set(piece.index, call);
      this.run.held.push({ call, added: true });
    } else if (piece.function?.name) {
      call.name += piece.function.name;
    }
    const fragment = piece.function?.arguments;
    if (fragment) {
      call.arguments += fragment;
      this.run.held.push({ call, delta: fragment });
    }
  }

  /** Writes the held tool call events; `final`: the run is over, so each call is done after its last one. */
  releaseRun(final) {
    const run = this.run;
    if (!run) return;
    const last = new Map(run.held.map((event, i) => [event.call, i]));
    const done = (call) => {
      call.status = 'completed';
      this.emit('response.function_call_arguments.done', { item_id: call.id, output_index: call.index, arguments: call.arguments });
      this.emit('response.output_item.done', { output_index: call.index, item: this.wireItem(call) });
    };
    run.held.forEach((event, i) => {
      const { call } = event;
      if (event.added) this.emit('response.output_item.added', { output_index: call.index, item: this.wireItem(call, false) });
      else this.emit('response.function_call_arguments.delta', { item_id: call.id, output_index: call.index, delta: event.delta });
      if (final && last.get(call) === i) done(call);
    });
    run.held = [];
    if (!final) return;
    // Calls whose last piece went out in an earlier flush.
    for (const call of run.calls.values()) if (call.status !== 'completed') done(call);
    this.run = null;
  }

  endRun() {
    this.releaseRun(true);
  }

  /** A Chat delta object (`content`, `reasoning_content`, `tool_calls`) as the calls above. */
  delta(delta, counted = true) {
    const before = [this.deltas, this.reasoningDeltas];
    if (typeof delta.reasoning_content === 'string' && delta.reasoning_content !== '') this.reasoning(delta.reasoning_content);
    if (typeof delta.content === 'string' && delta.content !== '') this.content(delta.content);
    // An empty `tool_calls: []` has no Responses equivalent: nothing is sent for it.
    for (const piece of delta.tool_calls ?? []) this.toolCall(piece);
    this.role();
    if (!counted) [this.deltas, this.reasoningDeltas] = before;
  }

  rawDelta(deltaJson, counted = true) {
    this.delta(JSON.parse(deltaJson), counted);
  }

  raw(text) {
    this.releaseRun(false);
    super.raw(text);
  }

  async flush(options) {
    this.releaseRun(false);
    await super.flush(options);
  }

  usage() {
    const input = this.ex.promptTokens;
    return {
      input_tokens: input,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: this.deltas,
      output_tokens_details: { reasoning_tokens: this.reasoningDeltas },
      total_tokens: input + this.deltas,
    };
  }

  /**
   * Ends the stream with an error mid-way, as the API does: an `error` event, then
   * `response.failed` whose response carries the error.
   */
  fail(error) {
    this.role();
    this.releaseRun(false);
    const code = error.code ?? error.type ?? 'server_error';
    this.emit('error', { error: { type: error.type ?? 'server_error', code, message: error.message, param: error.param ?? null } });
    const output = this.items.map((item) => this.wireItem(item));
    this.emit('response.failed', { response: this.response('failed', { error: { code, message: error.message }, output }) });
    this.endWith('');
  }

  /**
   * Closes the open items, then `response.completed`, or `response.incomplete` for the finish
   * reasons that leave a response incomplete ('length', 'content_filter'); not streaming, the
   * response object.
   */
  async complete(finishReason = 'stop') {
    this.role();
    const reason = INCOMPLETE[finishReason];
    this.endRun();
    this.closeOpen(reason ? 'incomplete' : 'completed');
    const response = this.completion(finishReason);
    if (!this.streaming) {
      this.ex.json(200, response);
      return;
    }
    this.emit(reason ? 'response.incomplete' : 'response.completed', { response });
    this.endWith('');
  }

  /**
   * Remembers the items of this response, for `responsesInputProblem`: each item's id and
   * encrypted reasoning, the reasoning item before it and the item after a reasoning item.
   */
  remember() {
    const state = this.ex.serverOptions?.scriptState;
    if (!state) return;
    const known = (state.responseItems ??= new Map());
    for (const [i, item] of this.items.entries()) {
      const before = this.items[i - 1];
      known.set(item.id, {
        type: item.type,
        encrypted: item.encrypted,
        next: item.type === 'reasoning' ? this.items[i + 1]?.id : undefined,
        reasoning: before?.type === 'reasoning' ? before.id : undefined,
      });
    }
  }

  /** The whole reply as one `response` object. */
  completion(finishReason = 'stop') {
    this.remember();
    const reason = INCOMPLETE[finishReason];
    return this.response(reason ? 'incomplete' : 'completed', {
      incomplete_details: reason ? { reason } : null,
      output: this.items.map((item) => this.wireItem(item)),
      usage: this.usage(),
    });
  }
}
