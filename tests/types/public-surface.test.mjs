// The public `.d.ts` as users import it (pkg/index.d.ts, after `./x build`), read with the
// TypeScript compiler API: wasm-bindgen's loader types and the package's internal members stay
// out, everything else the generated wasm_agent.d.ts declares is re-exported, and the docs a
// user reads in an editor are there (deprecation, one line per output getter).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const INDEX = path.join(ROOT, 'pkg/index.d.ts');
const GENERATED = path.join(ROOT, 'pkg/wasm_agent.d.ts');
/** What wasm-bindgen's `--target web` adds for loading the module; the entries do that themselves. */
const LOADER = ['InitInput', 'InitOutput', 'SyncInitInput', 'initSync', 'default'];

const program = ts.createProgram([INDEX], {
  noEmit: true,
  types: [],
  lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.esnext.disposable.d.ts'],
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
});
const checker = program.getTypeChecker();
const exportsOf = (file) => checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(file)));
const resolved = (s) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
const publicExports = exportsOf(INDEX);
const publicNames = publicExports.map((s) => s.name).sort();
const exported = (name) => resolved(publicExports.find((s) => s.name === name));
const docOf = (s) => ts.displayPartsToString(s.getDocumentationComment(checker)).trim();
/** The instance members of an exported class. */
const membersOf = (name) => checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(exported(name)));

test('the public types leave out wasm-bindgen\'s loader (InitOutput, initSync, …)', () => {
  assert.deepEqual(publicNames.filter((n) => LOADER.includes(n)), []);
});

test('every other declaration of the generated wasm_agent.d.ts marked `export` is public', () => {
  // (Helpers declared without `export`, such as Envelope, are importable from that file only.)
  const marked = (s) => (s.declarations ?? []).some((d) => ts.getCombinedModifierFlags(d) & ts.ModifierFlags.Export);
  const missing = exportsOf(GENERATED)
    .filter(marked)
    .map((s) => s.name)
    .filter((n) => !LOADER.includes(n) && !publicNames.includes(n));
  assert.deepEqual(missing, [], 'add them to the export lists of pkg-template/index.d.ts');
});

test('no exported class shows an internal member (__joinManager, __storeId, __memoryId, …)', () => {
  const classes = publicExports.map(resolved).filter((s) => s.flags & ts.SymbolFlags.Class);
  assert.ok(classes.length >= 6, classes.map((s) => s.name).join());
  const internal = [];
  for (const c of classes) {
    const statics = checker.getPropertiesOfType(checker.getTypeOfSymbol(c));
    for (const m of [...checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(c)), ...statics]) {
      if (m.name.startsWith('__') && !m.name.startsWith('__@')) internal.push(`${c.name}.${m.name}`);
    }
  }
  assert.deepEqual(internal, []);
});

test('streamUntilIdle is @deprecated and says what to use instead', () => {
  const member = membersOf('Agent').find((m) => m.name === 'streamUntilIdle');
  assert.ok(member, 'Agent.streamUntilIdle is declared');
  const tag = member.getJsDocTags(checker).find((t) => t.name === 'deprecated');
  assert.ok(tag, 'a @deprecated tag');
  assert.match(ts.displayPartsToString(tag.text), /agent\.stream\(messages, \{ untilIdle: true \}\)/);
});

test('every getter of AgentStreamOutput has a doc line', () => {
  const getters = membersOf('AgentStreamOutput').filter((m) =>
    (m.declarations ?? []).some((d) => ts.isGetAccessorDeclaration(d) || ts.isPropertyDeclaration(d) || ts.isPropertySignature(d)),
  );
  const names = getters.map((m) => m.name);
  for (const name of ['fullStream', 'textStream', 'runId', 'traceId', 'text', 'reasoningText', 'finishReason', 'usage', 'totalUsage', 'toolCalls', 'toolResults', 'steps', 'response', 'warnings', 'object']) {
    assert.ok(names.includes(name), `${name} is a getter (${names.join(', ')})`);
  }
  assert.deepEqual(getters.filter((m) => docOf(m) === '').map((m) => m.name), []);
});

test('cancelBackgroundTask takes a string task id and returns a boolean', () => {
  const member = membersOf('Agent').find((m) => m.name === 'cancelBackgroundTask');
  const [signature] = checker.getTypeOfSymbol(member).getCallSignatures();
  assert.equal(signature.parameters.length, 1);
  assert.equal(checker.typeToString(checker.getTypeOfSymbol(signature.parameters[0])), 'string');
  assert.equal(checker.typeToString(signature.getReturnType()), 'boolean');
});
