// A small syntax highlighter for the chat page's code blocks, loaded (by app.js) only once a
// reply shows a code block. Languages: JavaScript / TypeScript, Python, Rust, JSON and shell;
// another language, or none, is left as plain text.
// It only splits the code's text into spans (comments, strings, numbers, keywords, …): the text
// itself never changes and nothing is parsed as HTML.

const words = (list) => new Set(list.split(' '));

const JS_KEYWORDS = words(
  'as async await break case catch class const continue debugger default delete do else enum export extends finally for from function get if implements import in instanceof interface let new of package private protected public readonly return set static super switch throw try type typeof var void while with yield declare namespace abstract keyof satisfies',
);
const JS_LITERALS = words('true false null undefined NaN Infinity this');
const PY_KEYWORDS = words(
  'and as assert async await break class continue def del elif else except finally for from global if import in is lambda match case nonlocal not or pass raise return try while with yield',
);
const PY_LITERALS = words('True False None self cls');
const RS_KEYWORDS = words(
  'as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod move mut pub ref return static struct super trait type unsafe use where while',
);
const RS_LITERALS = words('true false self Self None Some Ok Err');
const SH_KEYWORDS = words('if then else elif fi for in do done case esac while until function return export local set unset readonly shift exit');

// Each language: an ordered list of [token class, pattern]; `ident` tokens are classified by the
// language's word sets. The first pattern that matches at a position wins.
const NUMBER = String.raw`\b(?:0[xX][\da-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)(?:n|[iuf](?:8|16|32|64|128|size))?\b`;

const LANGUAGES = {
  js: {
    rules: [
      ['com', String.raw`\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$)`],
      ['str', String.raw`"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?|\`(?:\\[\s\S]|[^\`\\])*\`?`],
      ['num', NUMBER],
      ['ident', String.raw`[A-Za-z_$][\w$]*`],
    ],
    keywords: JS_KEYWORDS,
    literals: JS_LITERALS,
  },
  py: {
    rules: [
      ['com', String.raw`#[^\n]*`],
      ['str', String.raw`[rRbBuUfF]{0,2}(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?)`],
      ['meta', String.raw`@[A-Za-z_][\w.]*`],
      ['num', NUMBER],
      ['ident', String.raw`[A-Za-z_]\w*`],
    ],
    keywords: PY_KEYWORDS,
    literals: PY_LITERALS,
  },
  rs: {
    rules: [
      ['com', String.raw`\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$)`],
      ['str', String.raw`b?r(?<hashes>#*)"[\s\S]*?(?:"\k<hashes>|$)|b?"(?:\\[\s\S]|[^"\\])*"?|b?'(?:\\.|[^'\\\n])'`],
      ['meta', String.raw`#!?\[[^\]\n]*\]?|'[A-Za-z_]\w*\b`],
      ['num', NUMBER],
      ['fn', String.raw`[A-Za-z_]\w*!`],
      ['ident', String.raw`[A-Za-z_]\w*`],
    ],
    keywords: RS_KEYWORDS,
    literals: RS_LITERALS,
  },
  json: {
    rules: [
      ['key', String.raw`"(?:\\.|[^"\\\n])*"(?=\s*:)`],
      ['str', String.raw`"(?:\\.|[^"\\\n])*"?`],
      ['num', String.raw`-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b`],
      ['ident', String.raw`[A-Za-z_]\w*`],
    ],
    keywords: new Set(),
    literals: words('true false null'),
  },
  sh: {
    rules: [
      ['com', String.raw`(?:^|(?<=\s))#[^\n]*`],
      ['str', String.raw`"(?:\\[\s\S]|[^"\\])*"?|'[^']*'?`],
      ['var', String.raw`\$\{[^}\n]*\}?|\$[A-Za-z_]\w*|\$[@#?$!*0-9-]`],
      ['ident', String.raw`[A-Za-z_][\w-]*`],
    ],
    keywords: SH_KEYWORDS,
    literals: new Set(),
  },
};

const ALIASES = {
  js: 'js', javascript: 'js', jsx: 'js', mjs: 'js', cjs: 'js', ts: 'js', typescript: 'js', tsx: 'js', mts: 'js',
  py: 'py', python: 'py', python3: 'py',
  rs: 'rs', rust: 'rs',
  json: 'json', jsonc: 'json',
  sh: 'sh', bash: 'sh', shell: 'sh', zsh: 'sh', console: 'sh', shellsession: 'sh',
};

const compiled = new Map();

/** The language of a fence's info word (`language-ts` → js), or null when it is not known. */
export function languageOf(name) {
  return ALIASES[String(name ?? '').toLowerCase()] ?? null;
}

function regexOf(lang) {
  let found = compiled.get(lang);
  if (!found) {
    const { rules } = LANGUAGES[lang];
    found = { kinds: rules.map(([kind]) => kind), re: new RegExp(rules.map(([, src]) => `(${src})`).join('|'), 'gm') };
    compiled.set(lang, found);
  }
  return found;
}

/**
 * The tokens of `text` in language `lang` (see languageOf): `[kind, text]` pairs, `kind` null for
 * plain text; their texts joined are `text`.
 */
export function tokenize(text, lang) {
  const def = LANGUAGES[lang];
  if (!def) return [[null, text]];
  const { kinds, re } = regexOf(lang);
  const out = [];
  const plain = (s) => {
    if (!s) return;
    if (out.length && out.at(-1)[0] === null) out.at(-1)[1] += s;
    else out.push([null, s]);
  };
  re.lastIndex = 0;
  let at = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m[0] === '') {
      re.lastIndex++;
      continue;
    }
    plain(text.slice(at, m.index));
    // Which top-level group matched (nested groups such as Rust's raw-string hashes are skipped).
    let group = 1;
    let kind = null;
    for (let i = 0; i < kinds.length; i++) {
      if (m[group] !== undefined) {
        kind = kinds[i];
        break;
      }
      group += 1 + countGroups(def.rules[i][1]);
    }
    if (kind === 'ident') {
      const word = m[0];
      if (def.keywords.has(word)) kind = 'kw';
      else if (def.literals.has(word)) kind = 'lit';
      else if (/^\s*\(/.test(text.slice(re.lastIndex, re.lastIndex + 8)) && lang !== 'json') kind = 'fn';
      else if (lang === 'rs' && /^[A-Z]/.test(word)) kind = 'type';
      else kind = null;
    }
    if (kind === null) plain(m[0]);
    else out.push([kind, m[0]]);
    at = re.lastIndex;
  }
  plain(text.slice(at));
  return out;
}

const groupCounts = new Map();

/** How many capturing groups a pattern has (so the top-level group of each rule can be found). */
function countGroups(src) {
  let n = groupCounts.get(src);
  if (n === undefined) {
    n = new RegExp(`${src}|`).exec('').length - 1;
    groupCounts.set(src, n);
  }
  return n;
}

/**
 * Highlights one `<code>` element in place, by its `language-*` class. Returns whether it did
 * (false for an unknown language or one already highlighted with the same text).
 */
export function highlightElement(code) {
  const match = /(?:^|\s)language-(\S+)/.exec(code.className);
  const lang = languageOf(match?.[1]);
  if (!lang) return false;
  const text = code.textContent;
  if (code.dataset.highlighted === text.length.toString() && code.querySelector('span')) return false;
  const doc = code.ownerDocument;
  const fragment = doc.createDocumentFragment();
  for (const [kind, piece] of tokenize(text, lang)) {
    if (kind === null) fragment.append(doc.createTextNode(piece));
    else {
      const span = doc.createElement('span');
      span.className = `tok-${kind}`;
      span.textContent = piece;
      fragment.append(span);
    }
  }
  code.replaceChildren(fragment);
  code.dataset.highlighted = String(text.length);
  code.closest('.code-block')?.classList.add('highlighted');
  return true;
}

/** Highlights every code block under `root`. */
export function highlightAll(root) {
  for (const code of root.querySelectorAll('pre > code[class*="language-"]')) highlightElement(code);
}
