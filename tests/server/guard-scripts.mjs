// The `guard` script: answers the classification calls of the model-backed built-in processors
// (SPEC §13.6) deterministically, by keywords in the content, so each one is tested offline.
//
// Which processor asks is told by the native schema the request carries (Chat
// `response_format.json_schema.schema`, Responses `text.format.schema`): `category_scores` →
// ModerationProcessor, `iso_code` → LanguageDetector, `detections` + `categories` → PIIDetector,
// `detections` alone → SystemPromptScrubber, `categories` + `reason` → PromptInjectionDetector.
// The content is what follows `Content: "` in the last user message, up to its last `"`.
//
//   moderation  "kill" → violence 0.9, "hate" → hate 0.8 (only categories the schema's enum lists)
//   PII         each e-mail address and ddd-ddd-dddd phone number → a detection with its offsets,
//               confidence 0.95 (redacted_value / redacted_content null: the processor redacts)
//   injection   "ignore (all) previous instructions" → injection 0.95; rewritten_content (when asked
//               for) is the content without that phrase
//   scrubber    each "You are …" sentence → a `system_prompt` detection with its offsets
//   language    two or more French words → fr 0.95 (a few known sentences translated), Spanish
//               words → es 0.9, else en 0.99
// A request without a native schema gets the prose "No classification schema was sent.".

import { lastUserText, streamPieces } from './scripts.mjs';
import { pieces } from './json-scripts.mjs';

const TRANSLATIONS = {
  'Bonjour, où est la gare la plus proche ?': 'Hello, where is the nearest train station?',
  'Je voudrais réserver une table pour deux personnes.': 'I would like to book a table for two people.',
};

function contentOf(body) {
  const text = lastUserText(body);
  const at = text.indexOf('Content: "');
  if (at < 0) return text;
  const end = text.lastIndexOf('"');
  return end > at + 10 ? text.slice(at + 10, end) : text.slice(at + 10);
}

const matches = (re, text) => [...text.matchAll(re)].map((m) => ({ value: m[0], start: m.index, end: m.index + m[0].length }));

function moderation(content, schema) {
  const allowed = schema.properties.category_scores?.anyOf?.[0]?.items?.properties?.category?.enum ?? [];
  const scores = [];
  if (/\bkill\b/i.test(content)) scores.push({ category: 'violence', score: 0.9 });
  if (/\bhate\b/i.test(content)) scores.push({ category: 'hate', score: 0.8 });
  const kept = scores.filter((s) => allowed.includes(s.category));
  return { category_scores: kept, reason: kept.length ? `The content mentions ${kept.map((s) => s.category).join(' and ')}.` : null };
}

function pii(content, schema) {
  const redact = 'redacted_content' in schema.properties;
  const found = [
    ...matches(/[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g, content).map((m) => ({ type: 'email', ...m })),
    ...matches(/\b\d{3}-\d{3}-\d{4}\b/g, content).map((m) => ({ type: 'phone', ...m })),
  ];
  const detections = found.map((d) => ({ type: d.type, value: d.value, confidence: 0.95, start: d.start, end: d.end, ...(redact ? { redacted_value: null } : {}) }));
  const categories = [...new Set(found.map((d) => d.type))].map((type) => ({ type, score: 0.95 }));
  return { categories, detections, ...(redact ? { redacted_content: null } : {}) };
}

function injection(content, schema) {
  const hit = /ignore (all )?previous instructions/i.test(content);
  const out = { categories: hit ? [{ type: 'injection', score: 0.95 }] : [], reason: hit ? 'It asks to ignore the previous instructions.' : null };
  if ('rewritten_content' in schema.properties) {
    const rest = content.replace(/ignore (all )?previous instructions( and)?[.,!]?\s*/i, '').trim();
    out.rewritten_content = hit && rest ? rest[0].toUpperCase() + rest.slice(1) : null;
  }
  return out;
}

function scrubber(content, schema) {
  const redact = 'redacted_content' in schema.properties;
  const detections = matches(/You are [^.!?\n]*[.!?]?/g, content).map((m) => ({ type: 'system_prompt', value: m.value, confidence: 0.9, start: m.start, end: m.end, ...(redact ? { redacted_value: null } : {}) }));
  return { detections, reason: detections.length ? 'The reply repeats its instructions.' : null, ...(redact ? { redacted_content: null } : {}) };
}

function language(content, schema) {
  const french = (content.match(/\b(bonjour|merci|je|suis|est|où|la|le|les|vous|voudrais|une|pour)\b/gi) ?? []).length;
  const spanish = (content.match(/\b(hola|gracias|dónde|está|por|favor|quiero|una|para)\b/gi) ?? []).length;
  let out = { iso_code: 'en', confidence: 0.99 };
  if (french >= 2) out = { iso_code: 'fr', confidence: 0.95 };
  else if (spanish >= 2) out = { iso_code: 'es', confidence: 0.9 };
  if ('translated_text' in schema.properties) out.translated_text = out.iso_code === 'en' ? null : (TRANSLATIONS[content] ?? `(translated) ${content}`);
  return out;
}

function classify(content, schema) {
  const p = schema?.properties ?? {};
  if ('category_scores' in p) return moderation(content, schema);
  if ('iso_code' in p) return language(content, schema);
  if ('detections' in p && 'categories' in p) return pii(content, schema);
  if ('detections' in p) return scrubber(content, schema);
  if ('categories' in p) return injection(content, schema);
  return undefined;
}

export function guardScripts() {
  return [
    [
      'guard',
      {
        description:
          'answers the built-in processors\' classification calls (moderation, PII, prompt injection, system prompt, language) by keywords in the content, as JSON fitting the request\'s schema',
        run(ex) {
          const b = ex.body;
          const schema = b?.response_format?.json_schema?.schema ?? b?.text?.format?.schema;
          const value = classify(contentOf(b), schema);
          return streamPieces(ex, pieces(value ? JSON.stringify(value) : 'No classification schema was sent.'));
        },
      },
    ],
  ];
}
