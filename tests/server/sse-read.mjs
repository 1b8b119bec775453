// Reading the server's replies in tests: a whole body (a broken stream reported, not thrown) and
// its SSE events.

/** Splits an SSE body into events `{ event, data }`. */
export function parseEvents(text) {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event = { event: undefined, data: '' };
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event.event = line.slice(7);
        else if (line.startsWith('data: ')) event.data += line.slice(6);
      }
      return event;
    });
}

/** Reads a whole response body; a broken stream is reported as `error`, not thrown. */
export async function readAll(res) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let error = null;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch (err) {
    error = err;
  }
  return { text, error };
}
