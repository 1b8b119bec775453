// "Summarise thread": asks the agent for a structured reply, `{ title, bullets[] }`, about the
// conversation on screen (structured output, SPEC §12) and shows the object filling in as it
// streams: each `object` chunk of `fullStream` redraws the card with the partial value, and the
// `object-result` chunk draws the validated one. The summary is not stored (the call has no
// `memory` option, so the conversation itself is not changed).

export const SUMMARY_SCHEMA = {
  type: 'object',
  properties: {
    title: { type: 'string', description: 'A short title for the conversation' },
    bullets: { type: 'array', items: { type: 'string' }, description: 'The main points, one sentence each' },
  },
  required: ['title', 'bullets'],
  additionalProperties: false,
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** The conversation as "User: …" / "Assistant: …" lines (one line per message). */
export function transcript(messages, textOf) {
  return messages
    .filter((m) => m.role === 'user' || m.role === 'assistant')
    .map((m) => `${m.role === 'user' ? 'User' : 'Assistant'}: ${textOf(m).replace(/\s+/g, ' ').trim()}`)
    .filter((line) => !/: $/.test(line))
    .join('\n');
}

/** The summary card: `draw(object, state)` shows a (partial) `{ title, bullets }`. */
function summaryCard(onClose) {
  const root = el('section', 'summary-card');
  root.setAttribute('aria-label', 'Summary of the conversation');
  const head = el('div', 'summary-head');
  const label = el('span', 'summary-label', 'Summary');
  const status = el('span', 'summary-status');
  const close = el('button', 'summary-close', '×');
  close.type = 'button';
  close.title = 'Close the summary';
  close.setAttribute('aria-label', 'Close the summary');
  close.addEventListener('click', () => {
    root.remove();
    onClose();
  });
  head.append(label, status, close);
  const title = el('h2', 'summary-title');
  const bullets = el('ul', 'summary-bullets');
  root.append(head, title, bullets);
  return {
    root,
    draw(object, state) {
      root.dataset.state = state;
      status.textContent = state === 'streaming' ? 'writing…' : state === 'done' ? '' : state;
      title.textContent = typeof object?.title === 'string' ? object.title : '';
      const list = Array.isArray(object?.bullets) ? object.bullets : [];
      const items = [...bullets.children];
      list.forEach((text, i) => {
        const li = items[i] ?? bullets.appendChild(el('li'));
        li.textContent = typeof text === 'string' ? text : '';
      });
      for (const extra of items.slice(list.length)) extra.remove();
    },
    fail(message) {
      root.dataset.state = 'failed';
      status.textContent = '';
      root.append(el('p', 'summary-error', message));
    },
  };
}

/**
 * Summarises thread `threadId`: reads it from `memory`, streams the structured reply of `agent`
 * into a card placed in `container`. `modelSettings`: extra settings for the call (the offline
 * model's script header); `controller` (an AbortController) stops it. Resolves to the final
 * object, or null when it failed or was stopped.
 */
export async function summarise({ agent, memory, threadId, container, textOf, modelSettings, controller, follow = () => {} }) {
  const signal = controller.signal;
  container.querySelector('.summary-card')?.remove();
  // Closed, or gone with the conversation (another thread shown): the call stops.
  const card = summaryCard(() => controller.abort());
  card.draw(null, 'streaming');
  container.append(card.root);
  follow();
  let messages;
  try {
    messages = await memory.listMessages({ threadId, format: 'ui' });
  } catch (err) {
    card.fail(`Could not read the conversation: ${err?.message ?? err}`);
    return null;
  }
  const text = transcript(messages, textOf);
  if (!text) {
    card.fail('There is nothing to summarise yet.');
    return null;
  }
  const options = { structuredOutput: { schema: SUMMARY_SCHEMA }, abortSignal: signal };
  if (modelSettings) options.modelSettings = modelSettings;
  let final = null;
  try {
    const out = await agent.stream(`Summarise this conversation as a title and a few bullet points.\n\n${text}`, options);
    for await (const chunk of out.fullStream) {
      if (!card.root.isConnected) {
        controller.abort();
        return null;
      }
      if (chunk.type === 'object') {
        card.draw(chunk.object, 'streaming');
        follow();
      } else if (chunk.type === 'object-result') {
        final = chunk.object;
        card.draw(final, 'done');
        follow();
      } else if (chunk.type === 'error') {
        card.fail(chunk.payload?.error?.message ?? 'The summary failed.');
        return null;
      }
    }
  } catch (err) {
    card.fail(signal?.aborted ? 'Stopped.' : (err?.message ?? String(err)));
    return null;
  }
  if (!final) card.fail('The model sent no summary.');
  return final;
}
