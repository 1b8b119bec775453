// The model server's deterministic embeddings (SPEC §21.3): hashed counts of lightly stemmed
// words, so texts that share words are similar and others are not, with no model and no network.
// Answers OpenAI's and Mistral's `POST …/embeddings` and Google's `…:batchEmbedContents`.

/** Words too common to say anything about a text's topic. */
const STOP = new Set(
  'a an and are as at be but by can do does for from have how i in is it me my of on or so tell that the their them they this to was what when where which who why will with you your about'.split(' '),
);

/** A word's light stem: lower case, common endings dropped ("validators" → "validator"). */
export function stem(word) {
  let w = word.toLowerCase();
  for (const end of ['ing', 'ers', 'es', 's']) {
    if (w.length > end.length + 3 && w.endsWith(end)) {
      w = w.slice(0, -end.length);
      break;
    }
  }
  return w;
}

/** FNV-1a of a string, as an unsigned 32-bit number. */
function hash(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The vector of `text`: `dims` buckets of word counts, scaled to length 1 (all zero for no words). */
export function embedText(text, dims = 256) {
  const v = new Array(dims).fill(0);
  for (const raw of String(text).split(/[^\p{L}\p{N}]+/u)) {
    if (raw.length < 2 || STOP.has(raw.toLowerCase())) continue;
    v[hash(stem(raw)) % dims] += 1;
  }
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return norm > 0 ? v.map((x) => x / norm) : v;
}

/** The requested dimension count, within 8…4096 (default 256). */
function dimsOf(n) {
  return Number.isInteger(n) && n >= 8 && n <= 4096 ? n : 256;
}

/**
 * The answer to an embeddings request at `pathname`, or null when it is not one:
 * `{ status, body }`.
 */
export function embeddingsAnswer(pathname, body) {
  if (/:batchEmbedContents$/.test(pathname)) {
    const requests = body?.requests;
    if (!Array.isArray(requests)) return { status: 400, body: { error: { code: 400, message: 'requests: expected an array', status: 'INVALID_ARGUMENT' } } };
    const embeddings = requests.map((r) => ({
      values: embedText((r?.content?.parts ?? []).map((p) => p?.text ?? '').join('\n'), dimsOf(r?.outputDimensionality)),
    }));
    return { status: 200, body: { embeddings } };
  }
  if (/(^|\/)embeddings$/.test(pathname)) {
    const input = typeof body?.input === 'string' ? [body.input] : body?.input;
    if (!Array.isArray(input) || input.some((t) => typeof t !== 'string')) {
      return { status: 400, body: { error: { message: "'input' must be a string or an array of strings", type: 'invalid_request_error', code: null } } };
    }
    if (String(body.model ?? '').startsWith('error-')) {
      return { status: 500, body: { error: { message: 'embeddings are down (scripted)', type: 'server_error', code: null } } };
    }
    const dims = dimsOf(body.dimensions ?? body.output_dimension);
    const data = input.map((t, index) => ({ object: 'embedding', index, embedding: embedText(t, dims) }));
    const tokens = input.reduce((n, t) => n + t.split(/\s+/).filter(Boolean).length, 0);
    return { status: 200, body: { object: 'list', data, model: String(body.model ?? ''), usage: { prompt_tokens: tokens, total_tokens: tokens } } };
  }
  return null;
}
