// Scripts for `isTaskComplete` (SPEC §15), on Chat Completions (and the Responses API, which the
// server maps onto Chat). A failed completion check adds its report to the conversation as an
// assistant message starting "#### Completion Check Results"; these scripts count those reports.
//
// `attempts` answers "attempt <n>" (n = reports in the request + 1), then " after <reason>" with
// the first "Reason: " line of the newest report, so a test sees what reached the model.

import { textOf } from './chat-stream.mjs';
import { streamPieces } from './scripts.mjs';

const HEADER = '#### Completion Check Results';

/** The completion reports in the request, oldest first. */
export function reports(body) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  return messages.filter((m) => m?.role === 'assistant' && textOf(m.content).startsWith(HEADER)).map((m) => textOf(m.content));
}

export function completionScripts() {
  return [
    [
      'attempts',
      {
        description: 'attempts: "attempt <n>" where n - 1 completion reports came before, then " after <first Reason: line of the newest report>"',
        run(ex) {
          const seen = reports(ex.body);
          let text = `attempt ${seen.length + 1}`;
          const last = seen.at(-1);
          const reason = last && /^Reason: (.*)$/m.exec(last);
          if (reason) text += ` after ${reason[1]}`;
          return streamPieces(ex, [text.slice(0, 7), text.slice(7)]);
        },
      },
    ],
  ];
}
