// Scripts for sub-agents (SPEC §18): a supervisor that delegates to the `agent-<key>` tools it is
// offered, and a sub-agent that says what it was sent (so tests see what was forwarded).
// Chat Completions (and the Responses API through the server's shared writer).

import { randomId, textOf, words } from './chat-stream.mjs';

const messagesOf = (body) => (Array.isArray(body?.messages) ? body.messages : []);

function lastUserText(body) {
  const messages = messagesOf(body);
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]?.role === 'user') return textOf(messages[i].content);
  return '';
}

function trailingTools(body) {
  const messages = messagesOf(body);
  const out = [];
  for (let i = messages.length - 1; i >= 0 && messages[i]?.role === 'tool'; i--) out.unshift(messages[i]);
  return out;
}

const toolNames = (body) =>
  (Array.isArray(body?.tools) ? body.tools : []).map((t) => t?.function?.name ?? t?.name).filter((n) => typeof n === 'string');

async function say(ex, text) {
  const chat = ex.chat();
  chat.role();
  for (const piece of words(text)) {
    chat.content(piece);
    await chat.maybeFlush();
  }
  await chat.complete('stop');
}

async function call(ex, calls) {
  const chat = ex.chat();
  chat.role();
  calls.forEach(({ name, args }, index) => {
    chat.toolCall({ index, id: 'call_' + randomId(24), type: 'function', function: { name, arguments: JSON.stringify(args) } });
  });
  await chat.complete('tool_calls');
}

/** What a tool result said: a JSON string as its text, anything else as given. */
function resultText(content) {
  const text = textOf(content);
  try {
    const v = JSON.parse(text);
    return typeof v === 'string' ? v : text;
  } catch {
    return text;
  }
}

/** `<key>[:<prompt>]` of a script argument. */
function keyAndPrompt(ex) {
  const colon = ex.arg.indexOf(':');
  const key = (colon < 0 ? ex.arg : ex.arg.slice(0, colon)) || 'researcher';
  const prompt = colon < 0 ? '' : ex.arg.slice(colon + 1);
  return { key, prompt: prompt || lastUserText(ex.body) };
}

export function subagentScripts() {
  return [
    [
      'supervisor',
      {
        description:
          'supervisor:<key>[:<prompt>] calls agent-<key> with { prompt } (default: the last user message); once results ' +
          'came back, answers "<key> said: <result>" (each result as the model read it)',
        async run(ex) {
          const { key, prompt } = keyAndPrompt(ex);
          const results = trailingTools(ex.body);
          if (!results.length) return call(ex, [{ name: `agent-${key}`, args: { prompt } }]);
          await say(ex, results.map((m) => `${key} said: ${resultText(m.content)}`).join(' | '));
        },
      },
    ],
    [
      'supervisor-all',
      {
        description:
          'supervisor-all[:<prompt>] calls every agent-* tool it is offered at once, each with { prompt }; then ' +
          'answers "Results: <result> | <result>" in call order',
        async run(ex) {
          const results = trailingTools(ex.body);
          if (results.length) return say(ex, `Results: ${results.map((m) => resultText(m.content)).join(' | ')}`);
          const prompt = ex.arg || lastUserText(ex.body);
          const names = toolNames(ex.body).filter((n) => n.startsWith('agent-'));
          await call(ex, names.map((name) => ({ name, args: { prompt } })));
        },
      },
    ],
    [
      'seen',
      {
        description:
          'seen[:<prefix>] answers with what it was sent, one "<role>: <text>" per message joined by " | " (tool calls ' +
          'as "<role>: +call <name>"), after <prefix> when given',
        run(ex) {
          const lines = messagesOf(ex.body).map((m) => {
            const calls = Array.isArray(m?.tool_calls) ? m.tool_calls.map((c) => ` +call ${c?.function?.name}`).join('') : '';
            return `${m?.role}: ${textOf(m?.content)}${calls}`;
          });
          return say(ex, (ex.arg ? `${ex.arg} ` : '') + lines.join(' | '));
        },
      },
    ],
  ];
}
