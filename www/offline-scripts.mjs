// The demo's own scripts for the offline model server (serve.mjs passes them to
// startModelServer), on top of the server's built-in catalogue:
//
// - `demo` answers as the built-in `demo` does, except when the newest user message carries
//   attachments (image or file parts): then it says which it received (names, media types and
//   sizes), so the page, and a test, can see what went out.
// - `summary[:<ms>]` answers a "summarise this conversation" request with the JSON object
//   `{ title, bullets }` the page's structured-output call asks for, streamed a few characters at
//   a time with <ms> (default 40) between pieces, so the page can show it filling in.
//
// serve.mjs does not serve this file to the page.

import { builtinScripts } from '../tests/server/scripts.mjs';
import { textOf, words } from '../tests/server/chat-stream.mjs';

/** The content of the request's last message when it is a user message, else null. */
function lastUserContent(body) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  const last = messages.at(-1);
  return last?.role === 'user' ? last.content : null;
}

/** `data:<type>;base64,<data>` → `{ type, bytes }` (bytes: the decoded size). */
function dataUrlInfo(url) {
  const match = /^data:([^;,]*)(;base64)?,(.*)$/s.exec(String(url ?? ''));
  if (!match) return { type: '', bytes: 0 };
  const data = match[3];
  const bytes = match[2] ? Math.floor((data.replace(/=+$/, '').length * 3) / 4) : decodeURIComponent(data).length;
  return { type: match[1], bytes };
}

/** The attachments of a Chat Completions user `content` array: `{ kind, name, type, bytes }`. */
export function attachmentsOf(content) {
  if (!Array.isArray(content)) return [];
  const out = [];
  for (const part of content) {
    if (part?.type === 'image_url') {
      // Chat Completions image parts carry no file name.
      out.push({ kind: 'image', name: '', ...dataUrlInfo(part.image_url?.url) });
    } else if (part?.type === 'file') {
      const info = dataUrlInfo(part.file?.file_data);
      out.push({ kind: 'file', name: String(part.file?.filename ?? ''), ...info });
    }
  }
  return out;
}

function describeAttachment(a) {
  const what = a.kind === 'image' ? 'an image' : `the file “${a.name || 'unnamed'}”`;
  return `${what} (${a.type || 'unknown type'}, ${a.bytes} bytes)`;
}

/** Streams `reasoning` then `text` word by word, `delayMs` apart. */
async function streamWords(ex, text, reasoning, delayMs) {
  const chat = ex.chat();
  chat.role();
  for (const piece of words(reasoning)) {
    chat.reasoning(piece);
    await chat.pause(delayMs);
  }
  for (const piece of words(text)) {
    chat.content(piece);
    await chat.pause(delayMs);
  }
  await chat.complete('stop');
}

/** The first words of `text` (at most `max` characters, cut at a space). */
function firstWords(text, max) {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max);
  const space = cut.lastIndexOf(' ');
  return `${space > max / 2 ? cut.slice(0, space) : cut}…`;
}

/**
 * The summary of a transcript the page sends ("User: …" / "Assistant: …" lines): the title names
 * the first user message, each bullet one user message (at most four).
 */
export function summaryOf(transcript) {
  const asked = [];
  for (const line of String(transcript).split('\n')) {
    const match = /^User: (.*)$/.exec(line);
    if (match && match[1].trim()) asked.push(match[1].trim());
  }
  if (!asked.length) return { title: 'An empty conversation', bullets: ['Nothing was said yet.'] };
  return {
    title: `About “${firstWords(asked[0], 40)}”`,
    bullets: asked.slice(0, 4).map((said) => `The user said “${firstWords(said, 60)}” and the offline model restated it.`),
  };
}

export function offlineScripts() {
  const demo = builtinScripts().get('demo');
  return {
    demo: {
      description: `${demo.description}; a message with attachments gets a reply naming each one`,
      async run(ex) {
        const attachments = attachmentsOf(lastUserContent(ex.body));
        if (!attachments.length) return demo.run(ex);
        const delayMs = ex.arg === '' ? (ex.serverOptions.demoDelayMs ?? 15) : Math.max(0, Number.parseInt(ex.arg, 10) || 0);
        const said = textOf(lastUserContent(ex.body)).trim();
        const list = attachments.map(describeAttachment).join(', ');
        const text =
          `I received ${attachments.length === 1 ? 'one attachment' : `${attachments.length} attachments`}: ${list}.` +
          (said ? ` Your message said: “${firstWords(said, 120)}”.` : '') +
          " I'm the offline demo model, so I can't look inside them, but a real model would.";
        await streamWords(ex, text, 'The user sent attachments. I will say what arrived.', delayMs);
      },
    },
    summary: {
      description: 'summary[:<ms>] the JSON { title, bullets } summary of the transcript in the last user message, 6 characters every <ms> (default 40) ms',
      async run(ex) {
        const delayMs = ex.arg === '' ? 40 : Math.max(0, Number.parseInt(ex.arg, 10) || 0);
        const json = JSON.stringify(summaryOf(textOf(lastUserContent(ex.body) ?? '')));
        const chat = ex.chat();
        chat.role();
        for (let i = 0; i < json.length; i += 6) {
          chat.content(json.slice(i, i + 6));
          await chat.pause(delayMs);
        }
        await chat.complete('stop');
      },
    },
  };
}
