// Safe markdown for model text, with no dependencies.
//
// The text is parsed into a small tree, which is then built with createElement and
// createTextNode only: nothing in the text can ever become markup (raw HTML in the text is shown
// as text), and a link keeps its href only when it is an absolute http:, https: or mailto: URL
// (anything else, javascript:, data:, vbscript:, relative paths, is shown as plain text).
//
// Blocks: paragraphs (a single newline is a line break), headings (# to ######), fenced code
// blocks (``` or ~~~, with a language), bullet and numbered lists (nested by indentation),
// block quotes, horizontal rules and pipe tables. Inline: **bold**, *italic*, ***both***,
// ~~strike~~, `code`, [links](https://…), <https://…> and bare https:// URLs, backslash escapes.
// An unclosed construct (a reply still streaming) shows its characters as they are.

const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);

/** The href to use for `raw`, or null when it is not an absolute http:, https: or mailto: URL. */
export function safeHref(raw) {
  const s = String(raw ?? '').trim();
  if (!/^(?:https?:\/\/|mailto:)/i.test(s)) return null;
  let url;
  try {
    url = new URL(s);
  } catch {
    return null;
  }
  return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
}

// ---------------------------------------------------------------------------------------------
// Blocks

const FENCE = /^( {0,3})(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}>/;
const LIST = /^( *)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*)|$)/;
const TABLE_DELIM = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;

const isBlank = (line) => /^[ \t]*$/.test(line);

/** Leading tabs as spaces (to the next multiple of 4), so indentation can be compared. */
function expandTabs(line) {
  const lead = /^[ \t]*/.exec(line)[0];
  if (!lead.includes('\t')) return line;
  let width = 0;
  for (const ch of lead) width = ch === '\t' ? width + 4 - (width % 4) : width + 1;
  return ' '.repeat(width) + line.slice(lead.length);
}

const indentOf = (line) => /^ */.exec(line)[0].length;

function isTableStart(lines, i) {
  return i + 1 < lines.length && lines[i].includes('|') && lines[i + 1].includes('|') && TABLE_DELIM.test(lines[i + 1]);
}

/** Whether `line` (after the first line of a paragraph) starts a block of its own. */
function startsBlock(lines, i) {
  const line = lines[i];
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || LIST.test(line) || isTableStart(lines, i);
}

/** Splits a table row into its cells (outer pipes optional; `\|` is a literal pipe). */
function tableCells(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = [];
  let cell = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && s[i + 1] === '|') {
      cell += '\\|';
      i++;
    } else if (s[i] === '|') {
      cells.push(cell.trim());
      cell = '';
    } else {
      cell += s[i];
    }
  }
  cells.push(cell.trim());
  return cells;
}

function parseList(lines, start, blocks) {
  const first = LIST.exec(lines[start]);
  const ordered = /\d/.test(first[2]);
  const baseIndent = first[1].length;
  const list = { type: 'list', ordered, start: ordered ? Number.parseInt(first[2], 10) : 1, items: [], loose: false };
  let item = null;
  let blankBefore = false;
  let i = start;
  for (; i < lines.length; i++) {
    const line = lines[i];
    const m = LIST.exec(line);
    if (m && m[1].length < baseIndent + 2 && (!item || m[1].length < item.offset)) {
      if (/\d/.test(m[2]) !== ordered) break; // a list of the other kind
      if (item && blankBefore) list.loose = true;
      const gap = line.length - (m[3] ?? '').length - m[1].length - m[2].length; // spaces after the marker
      const offset = m[1].length + m[2].length + (m[3] === undefined ? 1 : gap > 4 ? 1 : gap);
      item = { offset, lines: [m[3] ?? ''] };
      list.items.push(item);
      blankBefore = false;
      continue;
    }
    if (isBlank(line)) {
      // A blank line belongs to the list when the list goes on after it.
      let j = i + 1;
      while (j < lines.length && isBlank(lines[j])) j++;
      if (j === lines.length) break;
      const next = LIST.exec(lines[j]);
      const sibling = next && next[1].length < baseIndent + 2 && /\d/.test(next[2]) === ordered;
      if (!sibling && indentOf(lines[j]) < item.offset) break;
      item.lines.push('');
      blankBefore = true;
      continue;
    }
    const indent = indentOf(line);
    if (indent >= item.offset) {
      if (blankBefore) list.loose = true;
      item.lines.push(line.slice(item.offset));
      blankBefore = false;
      continue;
    }
    if (m && indent >= baseIndent + 2) {
      // A nested list indented less than the item's text (e.g. "1. a" then "  - b").
      item.lines.push(line.slice(indent));
      continue;
    }
    // A lazy continuation line of the item's paragraph.
    if (!blankBefore && item.lines.at(-1) !== '' && !startsBlock(lines, i)) {
      item.lines.push(line.trim());
      continue;
    }
    break;
  }
  for (const it of list.items) {
    while (it.lines.length && isBlank(it.lines.at(-1))) it.lines.pop();
    it.blocks = parseBlocks(it.lines);
    if (it.blocks.filter((b) => b.type === 'para').length > 1) list.loose = true;
  }
  blocks.push(list);
  return i;
}

/** Parses lines into block nodes. */
function parseBlocks(rawLines) {
  const lines = rawLines.map(expandTabs);
  const blocks = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      i++;
      continue;
    }
    let m = FENCE.exec(line);
    if (m) {
      const [, indent, fence, lang] = m;
      const body = [];
      i++;
      for (; i < lines.length; i++) {
        const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(lines[i]);
        if (close && close[1][0] === fence[0] && close[1].length >= fence.length) {
          i++;
          break;
        }
        const strip = Math.min(indent.length, indentOf(lines[i]));
        body.push(lines[i].slice(strip));
      }
      blocks.push({ type: 'code', lang, text: body.join('\n') });
      continue;
    }
    m = HEADING.exec(line);
    if (m) {
      blocks.push({ type: 'heading', level: m[1].length, text: m[2] ?? '' });
      i++;
      continue;
    }
    if (RULE.test(line)) {
      blocks.push({ type: 'rule' });
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const inner = [];
      for (; i < lines.length && QUOTE.test(lines[i]); i++) inner.push(lines[i].replace(/^ {0,3}> ?/, ''));
      blocks.push({ type: 'quote', blocks: parseBlocks(inner) });
      continue;
    }
    if (LIST.test(line)) {
      i = parseList(lines, i, blocks);
      continue;
    }
    if (isTableStart(lines, i)) {
      const head = tableCells(line);
      const align = tableCells(lines[i + 1]).map((c) =>
        c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : c.startsWith(':') ? 'left' : '',
      );
      const rows = [];
      for (i += 2; i < lines.length && !isBlank(lines[i]) && lines[i].includes('|'); i++) rows.push(tableCells(lines[i]));
      blocks.push({ type: 'table', head, align, rows });
      continue;
    }
    const para = [line.trim()];
    for (i++; i < lines.length && !isBlank(lines[i]) && !startsBlock(lines, i); i++) para.push(lines[i].trim());
    blocks.push({ type: 'para', text: para.join('\n') });
  }
  return blocks;
}

// ---------------------------------------------------------------------------------------------
// Inline

const PUNCT = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/;
const WORD = /[\p{L}\p{N}]/u;

function runLength(s, i, ch) {
  let n = 0;
  while (s[i + n] === ch) n++;
  return n;
}

/** The end of the code span whose opening run of `n` backticks ends at `from`, or -1. */
function codeSpanClose(s, from, n) {
  for (let j = from; j < s.length; ) {
    if (s[j] !== '`') {
      j++;
      continue;
    }
    const run = runLength(s, j, '`');
    if (run === n) return j;
    j += run;
  }
  return -1;
}

/** Where the closing run of `len` × `ch` for an opener ending at `from` starts, or -1. */
function delimClose(s, from, ch, len) {
  for (let j = from; j < s.length; ) {
    const c = s[j];
    if (c === '\\') {
      j += 2;
      continue;
    }
    if (c === '`') {
      const n = runLength(s, j, '`');
      const close = codeSpanClose(s, j + n, n);
      j = close === -1 ? j + n : close + n;
      continue;
    }
    if (c !== ch) {
      j++;
      continue;
    }
    const run = runLength(s, j, ch);
    const at = j + run - len; // the closer is the last `len` characters of a longer run
    const after = s[j + run] ?? ' ';
    if (run >= len && at > from && !/\s/.test(s[j - 1]) && (ch !== '_' || !WORD.test(after))) return at;
    j += run;
  }
  return -1;
}

/** `[label](dest "title")` starting at `i` (the `[`): `{ label, dest, end }`, or null. */
function parseLink(s, i) {
  let depth = 0;
  let j = i;
  for (; j < s.length; j++) {
    const c = s[j];
    if (c === '\\') j++;
    else if (c === '`') {
      const n = runLength(s, j, '`');
      const close = codeSpanClose(s, j + n, n);
      j = (close === -1 ? j + n : close + n) - 1;
    } else if (c === '[') depth++;
    else if (c === ']' && --depth === 0) break;
  }
  if (j >= s.length || s[j + 1] !== '(') return null;
  const label = s.slice(i + 1, j);
  let k = j + 2;
  while (s[k] === ' ') k++;
  let dest = '';
  if (s[k] === '<') {
    const close = s.indexOf('>', k);
    if (close === -1 || s.slice(k, close).includes('\n')) return null;
    dest = s.slice(k + 1, close);
    k = close + 1;
  } else {
    let parens = 0;
    for (; k < s.length; k++) {
      const c = s[k];
      if (c === '\\' && k + 1 < s.length) {
        dest += s[++k];
        continue;
      }
      if (/\s/.test(c)) break;
      if (c === '(') parens++;
      if (c === ')' && parens-- === 0) break;
      dest += c;
    }
  }
  while (s[k] === ' ' || s[k] === '\n') k++;
  if (s[k] === '"' || s[k] === "'") {
    const close = s.indexOf(s[k], k + 1);
    if (close === -1) return null;
    k = close + 1;
    while (s[k] === ' ') k++;
  }
  if (s[k] !== ')') return null;
  return { label, dest, end: k + 1 };
}

const BARE_URL = /^(?:https?:\/\/)[^\s<>"'`]+/i;

/** Inline nodes of `s`. `inLink`: links inside a link's label stay text. */
function parseInline(s, inLink = false) {
  const out = [];
  let buf = '';
  const flush = () => {
    if (buf) out.push({ type: 'text', text: buf });
    buf = '';
  };
  const push = (node) => {
    flush();
    out.push(node);
  };
  for (let i = 0; i < s.length; ) {
    const c = s[i];
    if (c === '\\' && s[i + 1] === '\n') {
      push({ type: 'br' });
      i += 2;
      continue;
    }
    if (c === '\\' && i + 1 < s.length && PUNCT.test(s[i + 1])) {
      buf += s[i + 1];
      i += 2;
      continue;
    }
    if (c === '\n') {
      push({ type: 'br' });
      i++;
      continue;
    }
    if (c === '`') {
      const n = runLength(s, i, '`');
      const close = codeSpanClose(s, i + n, n);
      if (close === -1) {
        buf += '`'.repeat(n);
        i += n;
        continue;
      }
      let code = s.slice(i + n, close).replace(/\n/g, ' ');
      if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ') && code.trim() !== '') code = code.slice(1, -1);
      push({ type: 'code', text: code });
      i = close + n;
      continue;
    }
    if (!inLink && (c === '[' || (c === '!' && s[i + 1] === '['))) {
      const image = c === '!';
      const link = parseLink(s, image ? i + 1 : i);
      if (link) {
        const href = safeHref(link.dest);
        if (href) {
          const children = image ? [{ type: 'text', text: link.label || link.dest }] : parseInline(link.label, true);
          push({ type: 'link', href, image, children });
        } else {
          buf += s.slice(i, link.end); // an unsafe or relative target: the whole thing as text
        }
        i = link.end;
        continue;
      }
    }
    if (!inLink && c === '<') {
      const m = /^<((?:https?:\/\/|mailto:)[^\s<>]*)>/i.exec(s.slice(i));
      const href = m && safeHref(m[1]);
      if (href) {
        push({ type: 'link', href, children: [{ type: 'text', text: m[1] }] });
        i += m[0].length;
        continue;
      }
    }
    if (!inLink && (c === 'h' || c === 'H') && (i === 0 || !/[\p{L}\p{N}/:.@-]/u.test(s[i - 1]))) {
      const m = BARE_URL.exec(s.slice(i));
      if (m) {
        let url = m[0];
        // Trailing punctuation ends the sentence, not the URL (a ')' only when unbalanced).
        for (;;) {
          const last = url.at(-1);
          if (/[.,;:!?*_~]/.test(last)) url = url.slice(0, -1);
          else if (last === ')' && (url.match(/\(/g) ?? []).length < (url.match(/\)/g) ?? []).length) url = url.slice(0, -1);
          else break;
        }
        const href = safeHref(url);
        if (href && url.length > 'https://'.length) {
          push({ type: 'link', href, children: [{ type: 'text', text: url }] });
          i += url.length;
          continue;
        }
      }
    }
    if (c === '*' || c === '_' || c === '~') {
      const n = runLength(s, i, c);
      const before = s[i - 1] ?? ' ';
      const after = s[i + n] ?? ' ';
      const canOpen = !/\s/.test(after) && (c !== '_' || !WORD.test(before)) && (c !== '~' || n === 2) && n <= 3;
      const close = canOpen ? delimClose(s, i + n, c, n) : -1;
      if (close !== -1) {
        const children = parseInline(s.slice(i + n, close), inLink);
        if (c === '~') push({ type: 'del', children });
        else if (n === 3) push({ type: 'strong', children: [{ type: 'em', children }] });
        else push({ type: n === 2 ? 'strong' : 'em', children });
        i = close + n;
        continue;
      }
      buf += c.repeat(n);
      i += n;
      continue;
    }
    buf += c;
    i++;
  }
  flush();
  return out;
}

// ---------------------------------------------------------------------------------------------
// Building the DOM

function buildInline(doc, nodes, parent) {
  for (const node of nodes) {
    switch (node.type) {
      case 'text':
        parent.append(doc.createTextNode(node.text));
        break;
      case 'br':
        parent.append(doc.createElement('br'));
        break;
      case 'code': {
        const code = doc.createElement('code');
        code.textContent = node.text;
        parent.append(code);
        break;
      }
      case 'link': {
        const a = doc.createElement('a');
        a.setAttribute('href', node.href);
        a.setAttribute('target', '_blank');
        a.setAttribute('rel', 'noopener noreferrer nofollow');
        a.title = node.href;
        if (node.image) a.className = 'image-link';
        buildInline(doc, node.children, a);
        parent.append(a);
        break;
      }
      default: {
        // strong, em, del
        const el = doc.createElement(node.type);
        buildInline(doc, node.children, el);
        parent.append(el);
      }
    }
  }
}

function buildBlocks(doc, blocks, parent, tight = false) {
  for (const block of blocks) {
    switch (block.type) {
      case 'para': {
        if (tight) {
          buildInline(doc, parseInline(block.text), parent);
        } else {
          const p = doc.createElement('p');
          buildInline(doc, parseInline(block.text), p);
          parent.append(p);
        }
        break;
      }
      case 'heading': {
        const h = doc.createElement(`h${block.level}`);
        buildInline(doc, parseInline(block.text), h);
        parent.append(h);
        break;
      }
      case 'rule':
        parent.append(doc.createElement('hr'));
        break;
      case 'code': {
        const wrap = doc.createElement('div');
        wrap.className = 'code-block';
        const lang = block.lang.replace(/[^\w+#.-]/g, '').slice(0, 32);
        if (lang) wrap.dataset.lang = lang;
        const copy = doc.createElement('button');
        copy.type = 'button';
        copy.className = 'copy-code';
        copy.title = 'Copy the code';
        copy.setAttribute('aria-label', 'Copy the code');
        const pre = doc.createElement('pre');
        const code = doc.createElement('code');
        if (lang) code.className = `language-${lang}`;
        code.textContent = block.text;
        pre.append(code);
        wrap.append(copy, pre);
        parent.append(wrap);
        break;
      }
      case 'quote': {
        const q = doc.createElement('blockquote');
        buildBlocks(doc, block.blocks, q);
        parent.append(q);
        break;
      }
      case 'list': {
        const list = doc.createElement(block.ordered ? 'ol' : 'ul');
        if (block.ordered && block.start !== 1) list.setAttribute('start', String(block.start));
        for (const item of block.items) {
          const li = doc.createElement('li');
          buildBlocks(doc, item.blocks, li, !block.loose);
          list.append(li);
        }
        parent.append(list);
        break;
      }
      case 'table': {
        const wrap = doc.createElement('div');
        wrap.className = 'table-wrap';
        const table = doc.createElement('table');
        const row = (cells, tag) => {
          const tr = doc.createElement('tr');
          block.head.forEach((_, k) => {
            const cell = doc.createElement(tag);
            if (block.align[k]) cell.style.textAlign = block.align[k];
            buildInline(doc, parseInline(cells[k] ?? ''), cell);
            tr.append(cell);
          });
          return tr;
        };
        const thead = doc.createElement('thead');
        thead.append(row(block.head, 'th'));
        table.append(thead);
        if (block.rows.length) {
          const tbody = doc.createElement('tbody');
          for (const cells of block.rows) tbody.append(row(cells, 'td'));
          table.append(tbody);
        }
        wrap.append(table);
        parent.append(wrap);
        break;
      }
      default:
        break;
    }
  }
}

/** The block and inline tree of `text` (for tests and other renderers). */
export function parseMarkdown(text) {
  return parseBlocks(String(text ?? '').replace(/\r\n?/g, '\n').split('\n'));
}

/** A DocumentFragment showing `text` as markdown, built without any HTML parsing. */
export function renderMarkdown(text, doc = globalThis.document) {
  const fragment = doc.createDocumentFragment();
  buildBlocks(doc, parseMarkdown(text), fragment);
  return fragment;
}
