// The chat page's code highlighter (www/highlight.js) on its own, in Node: the tokens of any
// text, in every language and at every cut (a code block still streaming), put back together
// are that text; and the common constructs get the kind a reader expects.
// `node --test www/highlight.test.mjs`.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { languageOf, tokenize } from './highlight.js';

const SAMPLES = {
  js: 'import { x } from "y";\n// note\nconst s = `a ${b} c`; /* block */ let n = 0x1f + 1e3 + 10n;\nfunction f(a) { return a?.b ?? null; }\n\'unterminated',
  py: '@decorator\ndef f(x: int) -> str:\n    """doc\n    string"""\n    s = f"{x!r}" # comment\n    return None if x else True\nb\'bytes\' r"raw\\n" \'\'\'open',
  rs: '#[derive(Debug)]\nfn main<\'a>(x: &\'a str) -> Result<(), E> {\n    let r = r##"raw "# still"##; // c\n    println!("{x}"); let c = \'\\n\'; 1_000u64 /* open',
  json: '{"key": "va\\"lue", "n": -1.5e-3, "ok": [true, false, null], "nested": {"a": 1}}',
  sh: '#!/bin/sh\nexport A="x $B ${C:-d}" # c\nif [ -f a#b ]; then echo \'it\'s\'; fi\nfor i in $(seq 3); do echo $i; done "open',
};

describe('highlight.js', () => {
  it('knows the languages by their fence names', () => {
    assert.deepEqual(
      ['js', 'TypeScript', 'tsx', 'python', 'py', 'rust', 'rs', 'json', 'bash', 'sh', 'zsh', 'go', '', undefined].map(languageOf),
      ['js', 'js', 'js', 'py', 'py', 'rs', 'rs', 'json', 'sh', 'sh', 'sh', null, null, null],
    );
  });

  it('never changes the text: every prefix of every sample, in every language, joins back', () => {
    for (const sample of Object.values(SAMPLES)) {
      for (const lang of Object.keys(SAMPLES)) {
        for (let end = 0; end <= sample.length; end++) {
          const text = sample.slice(0, end);
          const tokens = tokenize(text, lang);
          assert.equal(tokens.map(([, t]) => t).join(''), text, `${lang} at ${end}`);
          for (const [, t] of tokens) assert.notEqual(t, '', `an empty token (${lang} at ${end})`);
        }
      }
    }
    assert.deepEqual(tokenize('plain', 'cobol'), [[null, 'plain']]);
  });

  it('gives each construct its kind', () => {
    const kinds = (text, lang) => tokenize(text, lang).filter(([k]) => k);
    assert.deepEqual(kinds('const a = "s"; // c', 'js'), [
      ['kw', 'const'],
      ['str', '"s"'],
      ['com', '// c'],
    ]);
    assert.deepEqual(kinds('def f(): return None  # c', 'py'), [
      ['kw', 'def'],
      ['fn', 'f'],
      ['kw', 'return'],
      ['lit', 'None'],
      ['com', '# c'],
    ]);
    assert.deepEqual(kinds('let r = r#"a "b" c"#; x!(1u8)', 'rs'), [
      ['kw', 'let'],
      ['str', 'r#"a "b" c"#'],
      ['fn', 'x!'],
      ['num', '1u8'],
    ]);
    assert.deepEqual(kinds('{"k": [1, "v", true]}', 'json'), [
      ['key', '"k"'],
      ['num', '1'],
      ['str', '"v"'],
      ['lit', 'true'],
    ]);
    // `#` starts a comment only after a space or at the start of a line.
    assert.deepEqual(kinds('echo a#b $HOME # c', 'sh'), [
      ['var', '$HOME'],
      ['com', '# c'],
    ]);
  });
});
