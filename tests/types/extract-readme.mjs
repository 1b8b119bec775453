#!/usr/bin/env node
// Copies every JavaScript code block of README.md into its own file, so that
// `tsc -p tests/types/tsconfig.readme.json` checks the README against the package's types.
// A block is checked as what it is: js/javascript/mjs (and an html page's module script) as
// JavaScript (readme-N.js, with checkJs), ts/typescript as TypeScript (readme-N.ts). JavaScript
// differs where it matters: `this.agent = …` in a constructor declares the property.
//
//   node tests/types/extract-readme.mjs [README.md] [outDir]     (default: tests/types/generated/)
//
// Blocks fenced as js, javascript, mjs, ts or typescript are copied as they are. An html block's
// `<script type="module">` is copied too, its import of the package by path
// ('./node_modules/wasm-agent/index.browser.js') read as 'wasm-agent'. Each file starts with a
// comment naming the README line it came from; `export {}` is added to a block without
// import/export so that it is a module (top-level await). Older readme-N.ts/.js files there are removed first.

import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const DEFAULT_README = path.resolve(HERE, '../../README.md');
export const DEFAULT_OUT_DIR = path.join(HERE, 'generated');

const SCRIPT_LANGS = new Set(['js', 'javascript', 'mjs', 'ts', 'typescript']);
const TS_LANGS = new Set(['ts', 'typescript']);

/** The fenced code blocks of a markdown text: { lang, code, line } (line: 1-based, of the first code line). */
export function codeBlocks(markdown) {
  const blocks = [];
  const lines = markdown.split(/\r?\n/);
  let open = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (open === null) {
      const m = /^(\s*)(`{3,}|~{3,})\s*([\w+-]*)/.exec(line);
      if (m) open = { fence: m[2], indent: m[1].length, lang: m[3].toLowerCase(), line: i + 2, body: [] };
    } else if (line.trim().startsWith(open.fence) && line.trim().replace(/[`~]/g, '') === '') {
      blocks.push({ lang: open.lang, code: open.body.join('\n'), line: open.line });
      open = null;
    } else {
      open.body.push(line.slice(Math.min(open.indent, line.length - line.trimStart().length)));
    }
  }
  return blocks;
}

/** The module scripts of an html block, with the package's import path mapped to 'wasm-agent'. */
function moduleScripts(html, firstLine) {
  const out = [];
  const re = /<script\b[^>]*type=["']module["'][^>]*>([\s\S]*?)<\/script>/gi;
  for (let m; (m = re.exec(html)); ) {
    const before = html.slice(0, m.index + m[0].indexOf('>') + 1);
    const line = firstLine + before.split('\n').length; // the line after the <script> tag
    const code = m[1]
      .replace(/^\n/, '')
      .replace(/(['"])(?:\.{1,2}\/)*node_modules\/wasm-agent\/index\.\w+\.js\1/g, "'wasm-agent'");
    const indent = Math.min(...code.split('\n').filter((l) => l.trim()).map((l) => l.length - l.trimStart().length));
    out.push({ code: code.split('\n').map((l) => l.slice(Math.min(indent, l.length))).join('\n'), line });
  }
  return out;
}

/** The README's JavaScript, one entry per block: { code, line, lang }. */
export function readmeSnippets(markdown) {
  const snippets = [];
  for (const block of codeBlocks(markdown)) {
    if (SCRIPT_LANGS.has(block.lang)) snippets.push(block);
    else if (block.lang === 'html') for (const s of moduleScripts(block.code, block.line)) snippets.push({ ...s, lang: 'html' });
  }
  return snippets;
}

/**
 * Writes readme-N.js / readme-N.ts files (N from 1) into `outDir`; returns [{ file, line }], `line` being the
 * README line of the file's line 2 (line 1 is the comment).
 */
export function extractReadme({ readme = DEFAULT_README, outDir = DEFAULT_OUT_DIR } = {}) {
  const snippets = readmeSnippets(readFileSync(readme, 'utf8'));
  mkdirSync(outDir, { recursive: true });
  for (const old of readdirSync(outDir)) if (/^readme-\d+\.[jt]s$/.test(old)) rmSync(path.join(outDir, old));
  const name = path.basename(readme);
  return snippets.map((snippet, i) => {
    const file = path.join(outDir, `readme-${i + 1}.${TS_LANGS.has(snippet.lang) ? 'ts' : 'js'}`);
    const isModule = /^\s*(import|export)\b/m.test(snippet.code);
    const text =
      `// ${name} line ${snippet.line} (\`\`\`${snippet.lang}), extracted by tests/types/extract-readme.mjs\n` +
      `${snippet.code}\n${isModule ? '' : 'export {}\n'}`;
    writeFileSync(file, text);
    return { file, line: snippet.line };
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [readme, outDir] = process.argv.slice(2);
  const files = extractReadme({ readme: readme && path.resolve(readme), outDir: outDir && path.resolve(outDir) });
  for (const { file, line } of files) console.log(`${path.relative(process.cwd(), file)}  (README line ${line})`);
}
