#!/usr/bin/env node
// Type-checks the package's public types as TypeScript users meet them:
//   1. tests/types/api.ts, the whole surface with strict settings (tsconfig.json);
//   2. every JavaScript block of README.md, extracted into tests/types/generated/readme-N.js (a
//      ts block: readme-N.ts) and checked with checkJs, and
//      generated/exports.ts: each name the package exports at run time is a value in the types,
//      every other name the types export is type-only (tsconfig.readme.json);
//   3. the examples as JavaScript with allowJs + checkJs: examples/cli.mjs, examples/worker/worker.js,
//      examples/vite-app/main.js (tsconfig.examples.json; examples.d.ts declares the bits of Node
//      and of the Workers runtime they use).
// 'wasm-agent' resolves to the built package (pkg/index.d.ts): run `./x build` first.
//
//   node tests/types/run.mjs        exit 0 when all three checks pass, 1 on type errors, 2 when it cannot run
//
// Errors in README files name the README line as well: `[README.md:42]`.

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DEFAULT_OUT_DIR, extractReadme } from './extract-readme.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const TSC = path.join(ROOT, 'node_modules/.bin/tsc');

function fail(message) {
  process.stderr.write(`types: ${message}\n`);
  process.exit(2);
}

if (!existsSync(TSC)) fail('TypeScript is not installed: run `npm install` (or `./x setup`) at the repository root');
if (!existsSync(path.join(ROOT, 'pkg/index.d.ts')) || !existsSync(path.join(ROOT, 'pkg/wasm_agent.d.ts'))) {
  fail('pkg/ has no types: build the package first (`./x build`)');
}

const snippets = extractReadme();

// The value exports: every name the Node entry exports at run time (all entries export api.js)
// must be a value in the types, and every other name pkg/index.d.ts exports must be type-only.
let runtimeNames;
try {
  runtimeNames = Object.keys(await import(pathToFileURL(path.join(ROOT, 'pkg/index.node.js')).href)).sort();
} catch (err) {
  fail(`cannot import pkg/index.node.js: ${err?.message ?? err}`);
}
const ts = (await import('typescript')).default;
const indexDts = path.join(ROOT, 'pkg/index.d.ts');
const program = ts.createProgram([indexDts], {
  noEmit: true,
  types: [],
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
});
const checker = program.getTypeChecker();
const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(indexDts));
const declaredNames = moduleSymbol ? checker.getExportsOfModule(moduleSymbol).map((s) => s.name).sort() : [];
const exportsFile = path.join(DEFAULT_OUT_DIR, 'exports.ts');
writeFileSync(
  exportsFile,
  [
    "// Written by tests/types/run.mjs: the package's exports, declared (pkg/index.d.ts) and at run time.",
    "import * as pkg from 'wasm-agent';",
    '',
    '// Exported at run time: each is a value in the types.',
    ...runtimeNames.map((name) => `void pkg.${name};`),
    '',
    '// Declared but not exported at run time: each must be type-only (an unused @ts-expect-error',
    '// below is a value the types promise that the package does not export).',
    ...declaredNames
      .filter((name) => !runtimeNames.includes(name))
      .flatMap((name) => [`// @ts-expect-error '${name}' is not exported at run time`, `void pkg.${name};`]),
    '',
  ].join('\n'),
);

const exportLines = readFileSync(exportsFile, 'utf8').split('\n').map((l) => l.trim());
/** README line of readme-N.js's line 2 (line 1 is a comment). */
const readmeLine = new Map(snippets.map(({ file, line }) => [path.basename(file), line]));

/** Runs tsc on one project; prints its diagnostics (README ones with their README line); returns the error count. */
function typeCheck(project, label) {
  const run = spawnSync(TSC, ['-p', project, '--pretty', 'false'], { cwd: ROOT, encoding: 'utf8' });
  if (run.error) fail(`cannot run tsc: ${run.error.message}`);
  const lines = `${run.stdout}${run.stderr}`.split('\n').filter((l) => l !== '');
  let errors = 0;
  for (const line of lines) {
    const m = /^(?:.*\/)?(readme-\d+\.[jt]s)\((\d+),(\d+)\): error/.exec(line);
    let shown = m && readmeLine.has(m[1]) ? `${line}  [README.md:${readmeLine.get(m[1]) + Number(m[2]) - 2}]` : line;
    const e = /^(?:.*\/)?exports\.ts\((\d+),\d+\): error/.exec(line);
    if (e) shown = `${line}  [${exportLines.slice(Number(e[1]) - 1, Number(e[1]) + 1).join(' ')}]`;
    if (/\): error TS\d+:/.test(line) || /^error TS\d+:/.test(line)) errors += 1;
    console.log(shown);
  }
  if (run.status !== 0 && errors === 0) errors = 1; // tsc failed without a diagnostic we recognise
  console.log(`types: ${label}: ${errors === 0 ? 'ok' : `${errors} error${errors === 1 ? '' : 's'}`}`);
  return errors;
}

const apiErrors = typeCheck(path.join('tests/types', 'tsconfig.json'), 'tests/types/api.ts');
const readmeErrors = typeCheck(path.join('tests/types', 'tsconfig.readme.json'), `README.md (${snippets.length} blocks) and exports`);
const exampleErrors = typeCheck(path.join('tests/types', 'tsconfig.examples.json'), 'examples (cli.mjs, worker/worker.js, vite-app/main.js)');
process.exit(apiErrors + readmeErrors + exampleErrors === 0 ? 0 : 1);
