// Built-in processors written in JavaScript (SPEC §13.6). `UnicodeNormalizer` works on the
// input only and needs Unicode normalisation tables, which every runtime already has
// (`String.prototype.normalize`); in Rust they would add tens of kilobytes to the wasm.

const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/g;
const EMOJI = /[\p{Extended_Pictographic}\u{1F1E6}-\u{1F1FF}\u{FE0F}\u{200D}]/gu;

/** Normalises the text of the input messages: NFKC, optionally without control characters or
 * emoji, runs of spaces collapsed, trimmed. */
export class UnicodeNormalizer {
  id = 'unicode-normalizer';
  name = 'Unicode Normalizer';
  #options;

  constructor(options = {}) {
    if (options === null || typeof options !== 'object') {
      throw new TypeError(`new UnicodeNormalizer(options): expected an object or undefined, got ${options === null ? 'null' : typeof options}`);
    }
    const flag = (key, fallback) => {
      const v = options[key];
      if (v === undefined) return fallback;
      if (typeof v !== 'boolean') throw new TypeError(`new UnicodeNormalizer(options).${key}: expected a boolean, got ${typeof v}`);
      return v;
    };
    this.#options = {
      stripControlChars: flag('stripControlChars', false),
      preserveEmojis: flag('preserveEmojis', true),
      collapseWhitespace: flag('collapseWhitespace', true),
      trim: flag('trim', true),
    };
  }

  /** One text, normalised as the options say. */
  normalize(text) {
    const o = this.#options;
    let t = text.normalize('NFKC');
    if (o.stripControlChars) t = t.replace(CONTROL, '');
    if (!o.preserveEmojis) t = t.replace(EMOJI, '');
    if (o.collapseWhitespace) t = t.replace(/[ \t\f\v]+/g, ' ').replace(/\r\n?/g, '\n').replace(/\n{3,}/g, '\n\n');
    if (o.trim) t = t.trim();
    return t;
  }

  processInput({ messages }) {
    return messages.map((m) => {
      const parts = m?.content?.parts;
      if (!Array.isArray(parts)) return m;
      const next = parts.map((p) => (p?.type === 'text' && typeof p.text === 'string' ? { ...p, text: this.normalize(p.text) } : p));
      return { ...m, content: { ...m.content, parts: next } };
    });
  }
}
