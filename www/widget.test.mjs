// The chat page's widgets end to end: markdown replies (and that nothing in them runs), tool
// cards (the clock tool, a failing call, Approve / Decline), and the Settings dialog with the
// user's API key (sessionStorage, localStorage when remembered, never IndexedDB).
// `node --test www/` (needs pkg/ from `./x build` and Chromium). Screenshots: test-results/widget-*.png.

import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  RESULTS,
  WAIT,
  childEnv,
  modelRequests,
  newContext,
  openPage,
  promptOf,
  reload,
  sendAndWait,
  serve,
  shownMessages,
  useBrowser,
  waitForMessages,
} from './page-harness.mjs';

useBrowser();

const T = { timeout: 60_000 };

/** Every record of every IndexedDB database of the page (keys and values), as one JSON string. */
function indexedDbDump(page) {
  return page.evaluate(async () => {
    const request = (r) =>
      new Promise((resolve, reject) => {
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
      });
    const out = [];
    for (const { name } of await indexedDB.databases()) {
      const db = await request(indexedDB.open(name));
      for (const store of db.objectStoreNames) {
        const tx = db.transaction(store);
        const [keys, values] = await Promise.all([request(tx.objectStore(store).getAllKeys()), request(tx.objectStore(store).getAll())]);
        out.push({ db: name, store, keys, values });
      }
      db.close();
    }
    return JSON.stringify(out);
  });
}

/** Every value in localStorage and sessionStorage: `{ local: {…}, session: {…} }`. */
function webStorage(page) {
  return page.evaluate(() => {
    const all = (s) => Object.fromEntries(Array.from({ length: s.length }, (_, i) => [s.key(i), s.getItem(s.key(i))]));
    return { local: all(localStorage), session: all(sessionStorage) };
  });
}

/**
 * Records the tool cards' state changes and progress lines from DOM mutations: a card's states
 * are then the `oldValue`s of its data-state changes plus its current state (`cardStates`).
 */
async function recordToolCards(page) {
  await page.evaluate(() => {
    window.__cards = { old: {}, progress: [] };
    new MutationObserver((records) => {
      for (const r of records) {
        if (r.type === 'attributes') {
          const id = r.target.dataset.toolCallId;
          (window.__cards.old[id] ??= []).push(r.oldValue);
        } else if (r.target.classList?.contains('tool-progress')) {
          for (const node of [...r.addedNodes, ...r.removedNodes]) {
            if (node.textContent && !window.__cards.progress.includes(node.textContent)) window.__cards.progress.push(node.textContent);
          }
        }
      }
    }).observe(document.getElementById('messages'), {
      subtree: true,
      childList: true,
      attributes: true,
      attributeOldValue: true,
      attributeFilter: ['data-state'],
    });
  });
}

/** Each card's states in order (needs recordToolCards before the turn). */
function cardStates(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('.tool-card')].map((card) => {
      const all = [...(window.__cards.old[card.dataset.toolCallId] ?? []), card.dataset.state].filter(Boolean);
      return all.filter((state, i) => state !== all[i - 1]);
    }),
  );
}

/** The tool cards of the page: `{ state, icon, name, args, outcome, buttons }`. */
function toolCards(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('.tool-card')].map((card) => ({
      state: card.dataset.state,
      icon: card.querySelector('.tool-icon').textContent,
      name: card.querySelector('.tool-name').textContent,
      args: card.querySelector('.tool-args').textContent,
      outcome: card.querySelector('.tool-outcome').textContent,
      buttons: [...card.querySelectorAll('.tool-actions button')].map((b) => b.textContent),
    })),
  );
}

const MARKDOWN = [
  'a reply with **bold**, *italic*, `inline code` and a [link](https://example.com/docs).',
  '',
  '## A heading',
  '',
  '- first item',
  '- second item with **bold**',
  '  - a nested item',
  '',
  '1. one',
  '2. two',
  '',
  '> a quoted line',
  '',
  '```js',
  'const answer = 42;',
  'console.log(answer);',
  '```',
  '',
  'Last line',
  'after a line break.',
].join('\n');

describe('chat page: markdown replies', () => {
  let url;
  before(async () => {
    ({ url } = await serve(childEnv()));
  });

  it('serves the page modules, not the tests', T, async () => {
    for (const file of ['markdown.js', 'settings.js']) {
      const res = await fetch(`${url}${file}`);
      assert.equal(res.status, 200, file);
      assert.ok(res.headers.get('content-type').startsWith('text/javascript'), file);
      await res.arrayBuffer();
    }
    for (const hidden of ['page-harness.mjs', 'widget.test.mjs']) {
      const res = await fetch(`${url}${hidden}`);
      assert.equal(res.status, 404, hidden);
      await res.arrayBuffer();
    }
  });

  it('renders bold, lists, a code block and more, while it streams and after a reload', T, async () => {
    // `slow:<ms>` echoes the message word by word ("You said: …"), whitespace and newlines kept.
    const page = await openPage(`${url}?model=slow:15`);
    await page.evaluate(() => {
      window.__renders = { whileStreaming: 0, boldWhileStreaming: false };
      new MutationObserver(() => {
        const reply = document.querySelector('.msg.assistant');
        if (!reply || reply.dataset.done === '1') return;
        window.__renders.whileStreaming++;
        if (reply.querySelector('.text strong')) window.__renders.boldWhileStreaming = true;
      }).observe(document.getElementById('messages'), { subtree: true, childList: true });
    });
    const reply = await sendAndWait(page, MARKDOWN);
    const renders = await page.evaluate(() => window.__renders);
    assert.ok(renders.whileStreaming >= 5, `the reply was drawn ${renders.whileStreaming} time(s) while streaming`);
    assert.ok(renders.boldWhileStreaming, 'markdown was only drawn at the end');

    const check = async () => {
      const text = reply.locator('.text');
      assert.equal(await text.locator('p').first().locator('strong').textContent(), 'bold');
      assert.equal(await text.locator('p').first().locator('em').textContent(), 'italic');
      assert.equal(await text.locator('p').first().locator('code').textContent(), 'inline code');
      const link = text.locator('a');
      assert.equal(await link.count(), 1);
      assert.equal(await link.getAttribute('href'), 'https://example.com/docs');
      assert.equal(await link.getAttribute('target'), '_blank');
      assert.match(await link.getAttribute('rel'), /noopener/);
      assert.equal(await text.locator('h2').textContent(), 'A heading');
      assert.deepEqual(await text.locator(':scope > ul > li').evaluateAll((lis) => lis.map((li) => li.firstChild.textContent)), [
        'first item',
        'second item with ',
      ]);
      assert.equal(await text.locator('ul ul > li').textContent(), 'a nested item');
      assert.deepEqual(await text.locator('ol > li').allTextContents(), ['one', 'two']);
      assert.equal(await text.locator('blockquote').textContent(), 'a quoted line');
      const code = text.locator('pre > code');
      assert.equal(await code.getAttribute('class'), 'language-js');
      assert.equal(await code.textContent(), 'const answer = 42;\nconsole.log(answer);');
      assert.equal(await text.locator('p').last().locator('br').count(), 1);
      // The user's own message stays plain text.
      assert.equal(await page.locator('.msg.user .bubble').textContent(), MARKDOWN);
      assert.equal(await page.locator('.msg.user .bubble strong').count(), 0);
    };
    await check();
    const html = await reply.locator('.text').innerHTML();
    await page.screenshot({ path: path.join(RESULTS, 'widget-markdown.png') });

    await reload(page);
    await waitForMessages(page, 2);
    assert.equal(await reply.locator('.text').innerHTML(), html, 'drawn differently from memory');
    await check();
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('keeps unsafe links and raw HTML inert', T, async () => {
    const attack = [
      'Links: [x](javascript:alert(1)) [y](JaVaScRiPt:window.__xss=3) [d](data:text/html,<script>alert(1)</script>)',
      '[v](vbscript:msgbox(1)) [rel](/relative) [ok](https://example.com/ok) <javascript:alert(1)>',
      'Raw: <img src=x onerror="window.__xss=1"> <script>window.__xss=2</script> <a href="javascript:alert(1)">a</a>',
      '![pic](javascript:alert(1)) <svg onload="window.__xss=4"></svg>',
    ].join('\n');
    const page = await openPage(`${url}?model=echo`);
    const assertInert = async () => {
      await page.waitForTimeout(300); // an onerror or onload handler would have run by now
      assert.equal(await page.evaluate(() => window.__xss), undefined);
      const found = await page.evaluate(() => ({
        handlers: [...document.querySelectorAll('#messages *')].filter((e) => [...e.attributes].some((a) => a.name.startsWith('on'))).length,
        tags: document.querySelectorAll('#messages img, #messages script, #messages svg, #messages iframe').length,
        hrefs: [...document.querySelectorAll('#messages a')].map((a) => a.getAttribute('href')),
      }));
      assert.equal(found.handlers, 0, 'an element with an on* attribute');
      assert.equal(found.tags, 0, 'an img, script, svg or iframe element');
      assert.deepEqual(found.hrefs, ['https://example.com/ok']);
      const text = await page.locator('.msg.assistant .text').textContent();
      for (const literal of ['[x](javascript:alert(1))', '<img src=x onerror="window.__xss=1">', '<script>window.__xss=2</script>', '[rel](/relative)']) {
        assert.ok(text.includes(literal), `not shown as text: ${literal}`);
      }
    };
    await sendAndWait(page, attack);
    await assertInert();
    await page.screenshot({ path: path.join(RESULTS, 'widget-inert.png') });
    await reload(page);
    await waitForMessages(page, 2);
    await assertInert();

    // The renderer itself, on its own: only absolute http(s) and mailto targets become links.
    const verdicts = await page.evaluate(async () => {
      const { safeHref, renderMarkdown } = await import('/markdown.js');
      const targets = [
        'javascript:alert(1)',
        ' JAVASCRIPT:alert(1)',
        'java\tscript:alert(1)',
        'data:text/html;base64,PHNjcmlwdD4=',
        'vbscript:msgbox(1)',
        '//evil.example/x',
        '/relative',
        'file:///etc/passwd',
        'https://example.com/a b',
        'https://example.com/ok',
        'http://example.com/',
        'mailto:someone@example.com',
      ];
      const box = document.createElement('div');
      box.append(renderMarkdown(targets.map((t, i) => `[t${i}](${t}) <${t}>`).join('\n\n')));
      return {
        safe: targets.map((t) => safeHref(t)),
        hrefs: [...box.querySelectorAll('a')].map((a) => a.getAttribute('href')),
      };
    });
    assert.deepEqual(verdicts.safe, [
      null,
      null,
      null,
      null,
      null,
      null,
      null,
      null,
      'https://example.com/a%20b',
      'https://example.com/ok',
      'http://example.com/',
      'mailto:someone@example.com',
    ]);
    for (const href of verdicts.hrefs) assert.match(href, /^(https?:\/\/|mailto:)/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

describe('chat page: tool cards', () => {
  let url;
  before(async () => {
    ({ url } = await serve(childEnv()));
  });

  it('the demo model calls the clock tool when asked the time: the card goes ⋯ → ✓', T, async () => {
    const page = await openPage(url);
    assert.match(await page.textContent('#empty-hint'), /What time is it/);
    await recordToolCards(page);
    const said = 'What time is it?';
    const reply = await sendAndWait(page, said);
    assert.deepEqual(await cardStates(page), [['running', 'done']]);
    const progress = await page.evaluate(() => window.__cards.progress);
    assert.ok(progress.some((line) => line.startsWith('Reading the clock')), JSON.stringify(progress));
    const [card] = await toolCards(page);
    const year = String(new Date().getFullYear());
    assert.equal(card.state, 'done');
    assert.equal(card.icon, '✓');
    assert.equal(card.name, 'clock');
    assert.equal(card.args, '{}');
    assert.ok(card.outcome.startsWith('→ ') && card.outcome.includes(year), card.outcome);
    // The reply reports what the tool returned (the model server's `call:` script).
    assert.equal(await reply.locator('.text').textContent(), `The tool said: ${card.outcome.slice(2)}`);

    // What really happened: the page asked for the `call:clock` script, with the clock tool offered.
    const requests = (await modelRequests(url)).filter((r) => promptOf(r).find((m) => m.role === 'user')?.text === said);
    assert.equal(requests.length, 2, 'one request for the call, one after the result');
    for (const r of requests) {
      assert.equal(r.headers['x-script'], 'call:clock:{}');
      // (The offline demo model also gets the background research tool and the writer sub-agent.)
      assert.deepEqual(r.body.tools.map((t) => t.function.name), ['clock', 'research', 'agent-writer']);
    }
    assert.equal(requests[1].body.messages.at(-1).role, 'tool');
    await page.screenshot({ path: path.join(RESULTS, 'widget-tool-card.png') });

    // A message that is not about the time gets the plain demo reply, no tool.
    const hello = await sendAndWait(page, 'hello');
    assert.equal(await hello.locator('.tool-card').count(), 0);
    assert.match(await hello.locator('.text').textContent(), /offline demo model/);

    // Drawn from memory, the card is finished the same way.
    await reload(page);
    await waitForMessages(page, 4);
    assert.deepEqual(await toolCards(page), [card]);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('"ask the writer about …" hands the work to a sub-agent: its reply streams in a nested card, then the page\'s agent answers; the card is the same after a reload', T, async () => {
    const page = await openPage(url);
    const said = 'Ask the writer about the sea';
    await page.fill('#input', said);
    await page.press('#input', 'Enter');
    // While the sub-agent writes: its text grows inside the card, which is still running.
    await page.waitForFunction(() => {
      const card = document.querySelector('.tool-card');
      return card?.dataset.state === 'running' && card.querySelector('.sub-agent-text')?.textContent.length > 0;
    }, null, { timeout: WAIT });
    const partial = await page.locator('.sub-agent-text').textContent();
    assert.match(await page.locator('.sub-agent-label').textContent(), /^writer is working/);
    await page.screenshot({ path: path.join(RESULTS, 'widget-sub-agent-streaming.png') });
    await page.waitForFunction(() => document.querySelector('.msg.assistant[data-done="1"]'), null, { timeout: WAIT });
    const [card] = await toolCards(page);
    assert.equal(card.name, 'agent-writer');
    assert.equal(card.state, 'done');
    const written = await page.locator('.sub-agent-text').textContent();
    assert.ok(written.length > partial.length && written.startsWith(partial.trim().slice(0, 10)), `${partial} → ${written}`);
    assert.equal(await page.locator('.sub-agent-label').textContent(), 'writer answered');
    const reply = page.locator('.msg.assistant').last();
    const answer = await reply.locator('.text').textContent();
    assert.ok(answer.startsWith('writer said: '), answer);
    await page.screenshot({ path: path.join(RESULTS, 'widget-sub-agent-done.png') });

    // What the model server saw: the page's agent offered agent-writer and called it; the writer
    // got the conversation so far (user and assistant text) then the prompt, under its own
    // instructions, never the page agent's.
    const requests = await modelRequests(url);
    const writer = requests.filter((r) => r.headers['x-script'] === 'demo:40');
    assert.equal(writer.length, 1, 'one writer request');
    assert.deepEqual(promptOf(writer[0]), [{ role: 'user', text: said }, { role: 'user', text: 'the sea' }]);
    const system = writer[0].body.messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n');
    assert.match(system, /one short, vivid paragraph/);
    assert.doesNotMatch(system, /helpful, concise assistant/);
    const supervisor = requests.filter((r) => r.headers['x-script']?.startsWith('supervisor:writer:'));
    assert.equal(supervisor.length, 2, 'the call, then the answer');
    assert.ok(supervisor[0].body.tools.some((t) => t.function.name === 'agent-writer'));

    // Drawn from memory: the stored delegation and its result, the same nested text.
    await reload(page);
    await waitForMessages(page, 2);
    assert.equal((await toolCards(page))[0].name, 'agent-writer');
    assert.equal(await page.locator('.sub-agent-text').textContent(), written);
    assert.equal(await page.locator('.sub-agent-label').textContent(), 'writer answered');
    assert.equal(await page.locator('.msg.assistant .text').last().textContent(), answer);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('a failing tool call shows ✗ with the error', T, async () => {
    // `tool-call` calls the first tool with arguments made to fit its schema: timeZone "example".
    const page = await openPage(`${url}?model=tool-call`);
    const reply = await sendAndWait(page, 'call a tool');
    const [card] = await toolCards(page);
    assert.equal(card.state, 'failed');
    assert.equal(card.icon, '✗');
    assert.equal(card.args, '{"timeZone":"example"}');
    assert.match(card.outcome, /time zone/i);
    assert.match(await reply.locator('.text').textContent(), /^The tool said: .*time zone/i);
    await reload(page);
    await waitForMessages(page, 2);
    assert.deepEqual(await toolCards(page), [card]);
    await page.screenshot({ path: path.join(RESULTS, 'widget-tool-error.png') });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('Approve runs a call that waits for approval, Decline refuses it', T, async () => {
    const page = await openPage(`${url}?model=call:clock&approve=1`);
    await recordToolCards(page);

    await page.fill('#input', 'what time is it, with approval');
    await page.press('#input', 'Enter');
    const approve = page.locator('.tool-card .approve');
    await approve.waitFor({ timeout: WAIT });
    let [card] = await toolCards(page);
    assert.equal(card.state, 'approval');
    assert.deepEqual(card.buttons, ['Approve', 'Decline']);
    assert.equal(await page.isEnabled('#stop'), true, 'the run waits, still going');
    await page.screenshot({ path: path.join(RESULTS, 'widget-approval.png') });
    await approve.click();
    await page.locator('.msg.assistant[data-done="1"]').waitFor({ timeout: WAIT });
    [card] = await toolCards(page);
    assert.equal(card.state, 'done');
    assert.deepEqual(card.buttons, []);
    assert.deepEqual(await cardStates(page), [['running', 'approval', 'running', 'done']]);
    assert.match(await page.locator('.msg.assistant .text').textContent(), /^The tool said: .*\d/);

    await page.fill('#input', 'and again, to decline');
    await page.press('#input', 'Enter');
    const second = page.locator('.msg.assistant').nth(1);
    await second.locator('.decline').waitFor({ timeout: WAIT });
    await second.locator('.decline').click();
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant[data-done="1"]').length === 2, null, { timeout: WAIT });
    const cards = await toolCards(page);
    assert.equal(cards[1].state, 'denied');
    assert.deepEqual((await cardStates(page))[1], ['running', 'approval', 'denied']);
    assert.match(cards[1].outcome, /Declined in the demo/);
    // The model was told, with the reason the page gave.
    assert.match(await second.locator('.text').textContent(), /declined.*Declined in the demo/);
    const last = (await modelRequests(url)).at(-1);
    assert.equal(last.body.messages.at(-1).role, 'tool');
    assert.match(JSON.stringify(last.body.messages.at(-1).content), /Declined in the demo/);
    await page.screenshot({ path: path.join(RESULTS, 'widget-approval-done.png') });

    // From memory: one finished card, one declined.
    await reload(page);
    await waitForMessages(page, 4);
    assert.deepEqual((await toolCards(page)).map((c) => [c.state, c.icon, c.buttons.length]), [
      ['done', '✓', 0],
      ['denied', '⊘', 0],
    ]);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

/** Records every text the tool cards' status labels show (e.g. "running in the background · 2.0 s"). */
async function recordCardStatus(page) {
  await page.evaluate(() => {
    window.__status = [];
    const note = () => {
      for (const status of document.querySelectorAll('.tool-card .tool-status')) {
        const text = status.textContent;
        if (text && !window.__status.includes(text)) window.__status.push(text);
      }
    };
    new MutationObserver(note).observe(document.getElementById('messages'), { subtree: true, childList: true, characterData: true });
  });
}

/** The first words of the continuation directive (src/core/until_idle.rs). */
const DIRECTIVE = 'Background tasks you started earlier have finished';

describe('chat page: background tasks', () => {
  let url;
  before(async () => {
    ({ url } = await serve(childEnv()));
  });

  it('"research solana" runs in the background: its card goes running → completed, the follow-up turn answers in the same reply', T, async () => {
    // Steps of 1.5 s (4.5 s in all, the default is 3 s): a background-task-progress chunk (every
    // 2 s while the reply waits) comes well before the task ends, even on a slow machine.
    const page = await openPage(`${url}?research=1500`);
    assert.match(await page.textContent('#empty-hint'), /Research solana/);
    await recordToolCards(page);
    await recordCardStatus(page);
    const said = 'research solana';
    await page.fill('#input', said);
    await page.press('#input', 'Enter');

    // The first turn: the model calls research, which returns a placeholder at once, and says so.
    const reply = page.locator('.msg.assistant').last();
    await page.waitForFunction(() => /in the background/.test(document.querySelector('.msg.assistant .text')?.textContent ?? ''), null, {
      timeout: WAIT,
    });
    const early = await toolCards(page);
    assert.equal(early.length, 1);
    assert.equal(early[0].name, 'research');
    assert.equal(early[0].state, 'running', 'the task still runs while the first reply is shown');
    assert.equal(early[0].args, '{"topic":"solana"}');
    assert.deepEqual(early[0].buttons, ['Cancel']);
    assert.equal(await reply.getAttribute('data-done'), null, 'the reply waits for the task');
    assert.equal(await page.isEnabled('#stop'), true);
    await page.waitForFunction(() => /·/.test(document.querySelector('.task-card .tool-status')?.textContent ?? ''), null, { timeout: WAIT });
    await page.screenshot({ path: path.join(RESULTS, 'widget-task-running.png') });

    // The task ends; the agent answers it in a continuation turn, drawn in the same reply.
    await page.locator('.msg.assistant[data-done="1"]').waitFor({ timeout: WAIT });
    assert.deepEqual(await cardStates(page), [['running', 'done']]);
    const [card] = await toolCards(page);
    const result = 'solana: 3 sources read and summarised (offline demo: nothing was really looked up).';
    assert.equal(card.icon, '✓');
    assert.equal(card.outcome, `→ ${result}`);
    assert.deepEqual(card.buttons, []);
    const progress = await page.evaluate(() => window.__cards.progress);
    for (const line of ['Started in the background', 'Looking for sources about solana', 'Reading 3 sources', 'Writing up the findings']) {
      assert.ok(progress.includes(line), `progress line ${JSON.stringify(line)}: ${JSON.stringify(progress)}`);
    }
    const status = await page.evaluate(() => window.__status);
    assert.ok(
      status.some((s) => /^running in the background · \d+(\.\d)? s$/.test(s)),
      `no elapsed time from background-task-progress: ${JSON.stringify(status)}`,
    );
    assert.match(status.at(-1), /^completed in [4-9](\.\d)? s$/, JSON.stringify(status));
    assert.deepEqual((await shownMessages(page)).map((m) => m.role), ['user', 'assistant'], 'one reply holds both turns');
    const text = await reply.locator('.text').textContent();
    const started = "I started research in the background. I'll report back here when it finishes.";
    const followUp = `The background task research finished: ${result}`;
    assert.ok(text.startsWith(started), text);
    assert.ok(text.endsWith(followUp), text);
    assert.equal(await reply.locator('.text p').count(), 2, 'the follow-up is a paragraph of its own');
    assert.match(await reply.locator('.meta').textContent(), /tokens$/);
    await page.screenshot({ path: path.join(RESULTS, 'widget-task-done.png') });

    // The model requests: the user's turn, the step after the placeholder, the continuation,
    // each with the page's script and both tools; the continuation carries the directive.
    const requests = (await modelRequests(url)).filter((r) => promptOf(r).find((m) => m.role === 'user')?.text === said);
    assert.equal(requests.length, 3);
    for (const r of requests) {
      assert.equal(r.headers['x-script'], 'background:research:{"topic":"solana"}');
      assert.deepEqual(r.body.tools.map((t) => t.function.name), ['clock', 'research', 'agent-writer']);
    }
    const system = (r) => r.body.messages.filter((m) => m.role === 'system').map((m) => String(m.content)).join('\n');
    assert.ok(!system(requests[1]).includes(DIRECTIVE));
    assert.ok(system(requests[2]).includes(DIRECTIVE), system(requests[2]));
    assert.ok(JSON.stringify(requests[2].body.messages).includes(result), 'the continuation sees the real result');

    // From memory: the same conversation. The follow-up turn is stored as a message of its own;
    // the page draws it in the reply it continues, and the call's stored result is the real one.
    await reload(page);
    await waitForMessages(page, 2);
    assert.deepEqual(await shownMessages(page), [
      { role: 'user', text: said },
      { role: 'assistant', text },
    ]);
    assert.deepEqual(await toolCards(page), [card]);
    const stored = await page.evaluate(async (thread) => {
      const { Memory } = await import('/pkg/index.browser.js');
      return new Memory().listMessages({ threadId: thread, format: 'ui' });
    }, await page.getAttribute('#messages', 'data-thread'));
    assert.deepEqual(stored.map((m) => m.role), ['user', 'assistant', 'assistant']);
    const part = stored[1].parts.find((p) => p.type === 'tool-research');
    assert.equal(part.state, 'output-available');
    assert.equal(part.output, result);
    await page.screenshot({ path: path.join(RESULTS, 'widget-task-restored.png') });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('Cancel on a running task: the card ends cancelled and the follow-up turn says so', T, async () => {
    const page = await openPage(`${url}?research=3000`); // 9 s of research: time to cancel it
    await recordToolCards(page);
    await page.fill('#input', 'research cancelling');
    await page.press('#input', 'Enter');
    const cancel = page.locator('.task-card .cancel-task');
    await cancel.waitFor({ timeout: WAIT });
    await cancel.click();
    await page.locator('.msg.assistant[data-done="1"]').waitFor({ timeout: WAIT });
    assert.deepEqual(await cardStates(page), [['running', 'cancelled']]);
    const [card] = await toolCards(page);
    assert.equal(card.icon, '⊘');
    assert.equal(card.outcome, 'Cancelled: it has no result.');
    assert.match(await page.locator('.msg.assistant .text').textContent(), /The background task research was cancelled, so it has no result\.$/);
    await page.screenshot({ path: path.join(RESULTS, 'widget-task-cancelled.png') });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

describe('chat page: settings', () => {
  let url;
  before(async () => {
    ({ url } = await serve(childEnv()));
  });

  it('shows the offline model; the key goes to sessionStorage, localStorage when remembered, never IndexedDB', T, async () => {
    const KEY = `gsk-widget-test-${Date.now()}-secret`;
    const config = await (await fetch(`${url}config.json`)).json();
    const context = await newContext();
    const page = await openPage(url, context);

    // Offline: the dialog shows the offline model as the selected one.
    await page.click('#settings-button');
    await page.locator('#settings[open]').waitFor({ timeout: WAIT });
    assert.equal(await page.inputValue('#set-provider'), 'server');
    assert.equal(await page.locator('#set-provider option:checked').textContent(), 'offline demo');
    assert.equal(await page.inputValue('#set-model'), 'openai/demo');
    assert.equal(await page.isDisabled('#set-model'), true);
    assert.equal(await page.isDisabled('#set-key'), true);
    await page.screenshot({ path: path.join(RESULTS, 'widget-settings-offline.png') });

    // A provider with a key. Its base URL is the local model server, which answers the model
    // name `echo` with "You said: …" (and records the request's headers).
    await page.selectOption('#set-provider', 'groq');
    assert.equal(await page.isDisabled('#set-key'), false);
    assert.equal(await page.getAttribute('#set-model', 'placeholder'), 'llama-3.3-70b-versatile');
    await page.fill('#set-model', 'echo');
    await page.fill('#set-url', config.model.url);
    await page.fill('#set-key', KEY);
    assert.equal(await page.isChecked('#set-remember'), false);
    await page.screenshot({ path: path.join(RESULTS, 'widget-settings-provider.png') });
    await page.click('#set-save');
    await page.locator('#settings:not([open])').waitFor({ state: 'attached', timeout: WAIT });
    assert.equal(await page.textContent('#mode'), 'provider');
    assert.match(await page.textContent('#label'), /^groq\/echo · 127\.0\.0\.1:\d+, from this browser$/);

    let stored = await webStorage(page);
    assert.equal(stored.session['wasm-agent-demo:api-key:groq'], KEY);
    assert.ok(!JSON.stringify(stored.local).includes(KEY), 'the key is in localStorage without "remember"');
    assert.deepEqual(JSON.parse(stored.local['wasm-agent-demo:settings']), { provider: 'groq', model: 'echo', baseUrl: config.model.url });

    const said = 'hello through my own key';
    const reply = await sendAndWait(page, said);
    assert.equal(await reply.locator('.text').textContent(), `You said: ${said}`);
    const request = (await modelRequests(url)).find((r) => promptOf(r).at(-1)?.text === said);
    assert.equal(request.headers.authorization, `Bearer ${KEY}`, 'the key went with the model request');
    assert.equal(request.body.model, 'echo');

    let dump = await indexedDbDump(page);
    assert.ok(dump.includes(said), 'the IndexedDB dump does not hold the conversation');
    assert.ok(!dump.includes(KEY), 'the key was written to IndexedDB');
    assert.ok(!(await page.content()).includes(KEY), "the key is in the page's HTML");

    // A reload keeps provider and key (sessionStorage lasts as long as the tab).
    await reload(page);
    assert.match(await page.textContent('#label'), /^groq\/echo/);
    await sendAndWait(page, 'after a reload');

    // "Remember on this device": the key moves to localStorage.
    await page.click('#settings-button');
    assert.equal(await page.inputValue('#set-provider'), 'groq');
    assert.equal(await page.inputValue('#set-key'), KEY);
    await page.check('#set-remember');
    await page.click('#set-save');
    stored = await webStorage(page);
    assert.equal(stored.local['wasm-agent-demo:api-key:groq'], KEY);
    assert.equal(stored.session['wasm-agent-demo:api-key:groq'], undefined);

    // So another tab of the same browser profile has it too.
    const other = await openPage(url, context);
    assert.match(await other.textContent('#label'), /^groq\/echo/);
    const otherSaid = 'hello from a second tab';
    await sendAndWait(other, otherSaid);
    const otherRequest = (await modelRequests(url)).find((r) => promptOf(r).at(-1)?.text === otherSaid);
    assert.equal(otherRequest.headers.authorization, `Bearer ${KEY}`);
    await other.close();

    dump = await indexedDbDump(page);
    assert.ok(dump.includes(otherSaid) && !dump.includes(KEY), 'the key was written to IndexedDB');

    // Forget: the key leaves both storages. Without a key or a base URL the package refuses the
    // config, and the dialog says why (nothing changes).
    await page.click('#settings-button');
    await page.click('#set-forget');
    await page.fill('#set-url', '');
    assert.equal(await page.inputValue('#set-key'), '');
    stored = await webStorage(page);
    assert.ok(!JSON.stringify(stored).includes(KEY), 'Forget left the key stored');
    await page.click('#set-save');
    await page.locator('#set-error:not([hidden])').waitFor({ timeout: WAIT });
    assert.match(await page.textContent('#set-error'), /API key/i);
    assert.equal(await page.locator('#settings[open]').count(), 1);
    await page.screenshot({ path: path.join(RESULTS, 'widget-settings-error.png') });

    // Back to the offline model.
    await page.selectOption('#set-provider', 'server');
    await page.click('#set-save');
    assert.equal(await page.textContent('#mode'), 'offline demo');
    assert.match(await page.textContent('#label'), /^openai\/demo/);
    const back = await sendAndWait(page, 'hello again');
    assert.match(await back.locator('.text').textContent(), /offline demo model/);
    assert.ok(!(await indexedDbDump(page)).includes(KEY));
    assert.deepEqual(page.errors, []);
    await context.close();
  });
});
