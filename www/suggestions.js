// Suggestion chips of an empty conversation: a click sends the chip's text as the user's message.
// The offline demo model gets the messages its scripts answer best (a greeting, the clock tool,
// the background research tool, the writer sub-agent); a real model gets general ones.

/** What the offline demo model answers well (see offlineScriptFor in app.js). */
const OFFLINE_DEMO = ['Hello!', 'What time is it?', 'Research solana', 'Ask the writer about the sea'];
/** For a real model (any model also has the clock tool). */
const GENERAL = ['Explain WebAssembly in two sentences', 'What time is it in Tokyo?', 'Write a haiku about Rust'];

/** The chips' texts for the model in use. */
export function suggestionsFor(offlineDemo) {
  return offlineDemo ? OFFLINE_DEMO : GENERAL;
}

/** Draws one chip per text into `container`; clicking one calls `onPick(text)`. */
export function drawSuggestions(container, texts, onPick) {
  if (!container) return;
  container.replaceChildren(
    ...texts.map((text) => {
      const chip = document.createElement('button');
      chip.type = 'button';
      chip.className = 'chip';
      chip.textContent = text;
      chip.addEventListener('click', () => onPick(text));
      return chip;
    }),
  );
}
