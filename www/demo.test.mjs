// The chat demo end to end: `node --test www/` (needs pkg/ from `./x build` and Chromium).
// Starts www/serve.mjs as a child process on a free port and drives the page in headless
// Chromium with playwright-core (the harness is page-harness.mjs). Screenshots go to
// test-results/ (git-ignored).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startModelServer } from '../tests/server/model-server.mjs';
import {
  RESULTS,
  SECRET,
  T,
  WAIT,
  assertStreamed,
  childEnv,
  newContext,
  openPage,
  promptOf,
  recordReplyText,
  reload,
  requestFor,
  sendAndWait,
  serve,
  shownMessages,
  shownThreads,
  useBrowser,
  waitForMessages,
} from './page-harness.mjs';

useBrowser();

describe('demo page, offline model', () => {
  let url;
  before(async () => {
    ({ url } = await serve(childEnv()));
  });

  it('serves config, page and package with the right types, and nothing outside them', T, async () => {
    const config = await (await fetch(`${url}config.json`)).json();
    assert.equal(config.mode, 'offline');
    assert.equal(config.model.id, 'openai/demo');
    assert.match(config.model.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const echo = await (await fetch(`${url}config.json?model=echo`)).json();
    assert.equal(echo.model.id, 'openai/echo');

    const types = {
      '': 'text/html',
      'app.js': 'text/javascript',
      'style.css': 'text/css',
      'pkg/index.browser.js': 'text/javascript',
      'pkg/wasm_agent_bg.wasm': 'application/wasm',
      'pkg/package.json': 'application/json',
    };
    for (const [file, type] of Object.entries(types)) {
      const res = await fetch(`${url}${file}`);
      assert.equal(res.status, 200, file);
      assert.ok(res.headers.get('content-type').startsWith(type), `${file}: ${res.headers.get('content-type')}`);
      await res.arrayBuffer();
    }
    for (const bad of ['pkg/%2e%2e/package.json', 'pkg/..%2f..%2fpackage.json', '..%2fpackage.json', '%2e%2e/x', 'serve.mjs', 'pkg/.gitignore']) {
      const res = await fetch(`${url}${bad}`);
      assert.equal(res.status, 404, bad);
      await res.arrayBuffer();
    }
    // Offline mode has no proxy.
    const proxied = await fetch(`${url}proxy/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(proxied.status, 404);
    await proxied.arrayBuffer();
  });

  it('streams a reply with reasoning and usage', T, async () => {
    const page = await openPage(url);
    assert.equal(await page.textContent('#mode'), 'offline demo');
    await recordReplyText(page);
    const reply = await sendAndWait(page, 'hello');
    const text = await reply.locator('.text').textContent();
    assert.match(text, /offline demo model for wasm-agent/);
    await assertStreamed(page, text, 'offline');
    assert.match(await reply.locator('.thinking-text').textContent(), /greeting/);
    assert.match(await reply.locator('.meta').textContent(), /\d+ in · \d+ out .*tokens/);
    assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll('.msg')].map((m) => m.dataset.role)), [
      'user',
      'assistant',
    ]);
    await page.screenshot({ path: path.join(RESULTS, 'demo-offline.png') });

    // The next turn sends only the new message: the agent adds the history from memory.
    const second = await sendAndWait(page, 'thanks', { via: 'click' });
    assert.match(await second.locator('.text').textContent(), /welcome/i);
    assert.deepEqual(promptOf(await requestFor(url, 'thanks')).map((m) => m.role), ['user', 'assistant', 'user']);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('Stop aborts a slow reply and marks it stopped', T, async () => {
    const page = await openPage(`${url}?model=demo:150`);
    await page.fill('#input', 'Tell me something long');
    await page.click('#send');
    await page.waitForFunction(
      () => (document.querySelector('.msg.assistant .text')?.textContent.length ?? 0) > 0,
      null,
      { timeout: WAIT },
    );
    assert.equal(await page.isEnabled('#stop'), true);
    await page.click('#stop');
    const reply = page.locator('.msg.assistant[data-done="1"]');
    await reply.waitFor({ timeout: WAIT });
    assert.equal(await reply.locator('.meta').textContent(), 'stopped');
    const partial = await reply.locator('.text').textContent();
    assert.ok(partial.length > 0 && !partial.includes('same code will answer properly'), `not cut short: ${partial}`);
    // The page is usable again.
    assert.equal(await page.isEnabled('#send'), true);
    assert.equal(await page.isEnabled('#stop'), false);
    await page.screenshot({ path: path.join(RESULTS, 'demo-stopped.png') });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('shows model text literally, never as HTML', T, async () => {
    const payload = '<img src=x onerror="window.__xss=1">';
    for (const model of ['echo', 'demo']) {
      const page = await openPage(`${url}?model=${model}`);
      const reply = await sendAndWait(page, `Please repeat ${payload} back`);
      assert.ok((await reply.locator('.text').textContent()).includes(payload), `${model}: the payload is not shown as text`);
      await page.waitForTimeout(300); // an error handler would have run by now
      assert.equal(await page.evaluate(() => window.__xss), undefined);
      assert.equal(await page.locator('#messages img').count(), 0);
      if (model === 'echo') await page.screenshot({ path: path.join(RESULTS, 'demo-xss.png') });
      // Drawn again from memory after a reload, and in the thread list: still only text.
      await reload(page);
      await waitForMessages(page, 2);
      assert.ok((await page.locator('.msg.user .bubble').textContent()).includes(payload));
      assert.ok((await page.locator('.msg.assistant .text').textContent()).includes(payload), `${model}: restored`);
      assert.ok((await shownThreads(page))[0].label.startsWith('Please repeat <img'));
      await page.waitForTimeout(300);
      assert.equal(await page.evaluate(() => window.__xss), undefined);
      assert.equal(await page.locator('img').count(), 0);
      assert.deepEqual(page.errors, []);
      await page.context().close();
    }
  });

  it('shows a model error as an error line', T, async () => {
    const page = await openPage(`${url}?model=error-401`);
    const reply = await sendAndWait(page, 'hi');
    assert.match(await reply.locator('.error').textContent(), /Incorrect API key/);
    await page.context().close();
  });
});

describe('demo page, conversations kept in memory (IndexedDB)', () => {
  let url;
  before(async () => {
    ({ url } = await serve(childEnv()));
  });

  it('shows the same conversation after a reload, and the next turn carries it', T, async () => {
    const page = await openPage(url);
    const turns = ['hello from the reload test', 'thanks, reload test'];
    for (const turn of turns) await sendAndWait(page, turn);
    const before = await shownMessages(page);
    assert.deepEqual(before.map((m) => m.role), ['user', 'assistant', 'user', 'assistant']);
    assert.deepEqual([before[0].text, before[2].text], turns);
    const threadId = await page.evaluate(() => localStorage.getItem('wasm-agent-demo:thread'));
    assert.ok(threadId, 'no thread id in localStorage');

    await reload(page);
    await waitForMessages(page, 4);
    assert.deepEqual(await shownMessages(page), before);
    assert.equal(await page.evaluate(() => localStorage.getItem('wasm-agent-demo:thread')), threadId);
    // The reasoning is back in its collapsed block; nothing is marked stopped or failed.
    const thinking = page.locator('.msg.assistant').first().locator('.thinking');
    assert.equal(await thinking.count(), 1);
    assert.equal(await thinking.evaluate((d) => d.open), false);
    // How long it thought is kept by the page (memory does not store it): the label is the live one.
    assert.match(await thinking.locator('summary').textContent(), /^Thought for (under a second|\d+\.\d s)$/);
    assert.match(await thinking.locator('.thinking-text').textContent(), /greeting/);
    assert.equal(await page.locator('.msg.stopped, .msg.failed, .msg.pending').count(), 0);
    assert.deepEqual(await shownThreads(page), [{ id: threadId, label: 'hello from the reload test', current: true }]);
    await page.screenshot({ path: path.join(RESULTS, 'demo-restored.png') });

    // A third turn: the page sends only it, the model gets the first two turns before it.
    const third = 'And one more question after the reload?';
    await sendAndWait(page, third);
    assert.deepEqual(promptOf(await requestFor(url, third)), [
      { role: 'user', text: turns[0] },
      { role: 'assistant', text: before[1].text },
      { role: 'user', text: turns[1] },
      { role: 'assistant', text: before[3].text },
      { role: 'user', text: third },
    ]);
    await waitForMessages(page, 6);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('two tabs writing to one thread in turn lose nothing', T, async () => {
    const context = await newContext();
    const a = await openPage(`${url}?model=echo`, context);
    const b = await openPage(`${url}?model=echo`, context);
    const thread = (p) => p.evaluate(() => localStorage.getItem('wasm-agent-demo:thread'));
    assert.equal(await thread(b), await thread(a), 'the tabs show different threads');
    const turns = [
      [a, 'one, from tab A'],
      [b, 'two, from tab B'],
      [a, 'three, from tab A'],
      [b, 'four, from tab B'],
    ];
    const expected = [];
    for (const [tab, said] of turns) {
      // The other tab's turn shows up here without a reload.
      await waitForMessages(tab, expected.length);
      assert.deepEqual(await shownMessages(tab), expected);
      await sendAndWait(tab, said);
      expected.push({ role: 'user', text: said }, { role: 'assistant', text: `You said: ${said}` });
      // Each model request carried every earlier turn, whichever tab wrote it.
      assert.deepEqual(promptOf(await requestFor(url, said)), expected.slice(0, -1));
    }
    assert.equal(expected.length, 8);
    for (const tab of [a, b]) {
      await reload(tab);
      await waitForMessages(tab, 8);
      assert.deepEqual(await shownMessages(tab), expected);
      assert.equal((await shownThreads(tab)).length, 1);
      assert.deepEqual(tab.errors, []);
    }
    await b.screenshot({ path: path.join(RESULTS, 'demo-two-tabs.png') });
    await context.close();
  });

  it('a reply streaming in one tab streams in the other tab on the same conversation (memory.watch)', T, async () => {
    const context = await newContext();
    const a = await openPage(`${url}?model=demo:120`, context);
    const b = await openPage(`${url}?model=demo:120`, context);
    await recordReplyText(b);
    const said = 'Tell me about the mirror';
    await a.fill('#input', said);
    await a.press('#input', 'Enter');
    // B shows the user message and a part of the reply while A is still streaming it.
    await b.waitForFunction(() => (document.querySelector('#messages .msg.assistant .text')?.textContent ?? '').length > 0, null, { timeout: WAIT });
    assert.equal(await a.locator('.msg.assistant:not([data-done="1"])').count(), 1, 'A is still streaming');
    assert.equal((await shownMessages(b))[0].text, said);
    await waitForMessages(a, 2);
    await waitForMessages(b, 2);
    const [shownA, shownB] = [await shownMessages(a), await shownMessages(b)];
    assert.deepEqual(shownB, shownA);
    const snapshots = await b.evaluate(() => window.__snapshots);
    assert.ok(snapshots.length >= 3, `B's reply text changed ${snapshots.length} time(s): it was not streamed`);
    for (const { text } of snapshots) assert.ok(shownA[1].text.startsWith(text), `${JSON.stringify(text)} is not a prefix of A's reply`);
    assert.deepEqual(a.errors, []);
    assert.deepEqual(b.errors, []);
    await context.close();
  });

  it('a stopped reply is shown marked stopped after a reload', T, async () => {
    const page = await openPage(`${url}?model=demo:150`);
    await page.fill('#input', 'Tell me something long, then stop');
    await page.click('#send');
    await page.waitForFunction(
      () => (document.querySelector('.msg.assistant .text')?.textContent.length ?? 0) > 0,
      null,
      { timeout: WAIT },
    );
    await page.click('#stop');
    await page.locator('.msg.assistant[data-done="1"]').waitFor({ timeout: WAIT });
    const partial = await page.locator('.msg.assistant .text').textContent();
    assert.ok(partial.length > 0 && !partial.includes('same code will answer properly'), `not cut short: ${partial}`);

    await reload(page);
    await waitForMessages(page, 2);
    const reply = page.locator('.msg.assistant');
    assert.equal(await reply.evaluate((m) => m.classList.contains('stopped')), true);
    assert.equal(await reply.locator('.meta').textContent(), 'stopped');
    assert.equal(await reply.locator('.text').textContent(), partial);
    assert.match(await reply.locator('.thinking-text').textContent(), /sent a message/);
    assert.equal(await page.locator('.msg.user .bubble').textContent(), 'Tell me something long, then stop');
    await page.screenshot({ path: path.join(RESULTS, 'demo-stopped-restored.png') });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('New chat starts a thread; switching back shows the first; both are listed', T, async () => {
    const page = await openPage(`${url}?model=echo`);
    await sendAndWait(page, 'first thread: planning a trip to Lisbon in spring');
    const first = await shownMessages(page);
    const [firstThread] = await shownThreads(page);
    assert.equal(firstThread.label, 'first thread: planning a trip to Lisbon…');

    await page.click('#new-chat');
    await waitForMessages(page, 0);
    assert.equal(await page.isVisible('#empty'), true);
    let threads = await shownThreads(page);
    assert.deepEqual(threads.map((t) => [t.label, t.current]), [
      ['New conversation', true],
      [firstThread.label, false],
    ]);
    await sendAndWait(page, 'second thread: a recipe for bread');
    const second = await shownMessages(page);
    await page.waitForFunction(() => document.querySelectorAll('#threads .thread-time:not(:empty)').length === 2, null, {
      timeout: WAIT,
    });
    threads = await shownThreads(page);
    // Most recent first.
    assert.deepEqual(threads.map((t) => [t.label, t.current]), [
      ['second thread: a recipe for bread', true],
      [firstThread.label, false],
    ]);
    const secondThread = threads[0];

    await page.click(`#threads li[data-thread-id="${firstThread.id}"] .thread`);
    await page.waitForFunction((text) => document.querySelector('#messages .msg.user .bubble')?.textContent === text, first[0].text, {
      timeout: WAIT,
    });
    await waitForMessages(page, 2);
    assert.deepEqual(await shownMessages(page), first);
    assert.deepEqual((await shownThreads(page)).map((t) => t.current), [false, true]);

    // A reload keeps the chosen thread.
    await reload(page);
    await waitForMessages(page, 2);
    assert.deepEqual(await shownMessages(page), first);
    assert.deepEqual((await shownThreads(page)).map((t) => [t.id, t.current]), [
      [secondThread.id, false],
      [firstThread.id, true],
    ]);
    await page.screenshot({ path: path.join(RESULTS, 'demo-threads.png') });

    await page.click(`#threads li[data-thread-id="${secondThread.id}"] .thread`);
    await page.waitForFunction((text) => document.querySelector('#messages .msg.user .bubble')?.textContent === text, second[0].text, {
      timeout: WAIT,
    });
    assert.deepEqual(await shownMessages(page), second);

    // Deleting the shown thread (after a confirm) leaves the other and opens a new chat.
    page.once('dialog', (dialog) => dialog.accept());
    await page.click(`#threads li[data-thread-id="${secondThread.id}"] .thread-delete`);
    await page.waitForFunction((id) => !document.querySelector(`#threads li[data-thread-id="${id}"]`), secondThread.id, {
      timeout: WAIT,
    });
    await waitForMessages(page, 0);
    assert.deepEqual((await shownThreads(page)).map((t) => t.label), ['New conversation', firstThread.label]);
    await reload(page);
    assert.deepEqual((await shownThreads(page)).map((t) => t.label), ['New conversation', firstThread.label]);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('titles a new thread when a title model is set', T, async () => {
    const page = await openPage(`${url}?model=echo&title=${encodeURIComponent('text:Greeting the offline model')}`);
    await sendAndWait(page, 'hello there, please title this');
    await page.waitForFunction(() => document.querySelector('#threads .thread-title')?.textContent === 'Greeting the offline model', null, {
      timeout: WAIT,
    });
    await reload(page);
    assert.deepEqual((await shownThreads(page)).map((t) => t.label), ['Greeting the offline model']);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

describe('demo page, provider through the proxy', () => {
  let url;
  let upstream;
  before(async () => {
    // The "provider" is a local model server; the proxy must add the key on the way.
    upstream = await startModelServer({ demoDelayMs: 20 });
    ({ url } = await serve(
      childEnv({ OPENAI_API_KEY: SECRET, OPENAI_BASE_URL: upstream.url, WASM_AGENT_DEMO_MODEL: 'demo' }),
    ));
  });
  after(() => upstream?.close());

  it('keeps the key on the server and streams through the proxy', T, async () => {
    const configText = await (await fetch(`${url}config.json`)).text();
    assert.ok(!configText.includes(SECRET), 'the key reached /config.json');
    const config = JSON.parse(configText);
    assert.equal(config.mode, 'provider');
    assert.deepEqual(config.model, { id: 'openai/demo', url: `${url}proxy/v1`, apiKey: 'proxied' });

    // In the page (?worker=0), where Playwright sees every request the agent makes.
    const page = await openPage(`${url}?worker=0`);
    const sent = [];
    page.on('request', (req) => sent.push(JSON.stringify(req.headers()) + (req.postData() ?? '')));
    assert.equal(await page.textContent('#mode'), 'provider');
    await recordReplyText(page);
    const reply = await sendAndWait(page, 'hello');
    const text = await reply.locator('.text').textContent();
    assert.match(text, /offline demo model for wasm-agent/);
    await assertStreamed(page, text, 'proxied');

    // The OpenAI provider speaks the Responses API.
    const [request] = upstream.requests.filter((r) => r.path.endsWith('/responses'));
    assert.equal(request.headers.authorization, `Bearer ${SECRET}`);
    assert.equal(request.body.model, 'demo');
    assert.equal(request.headers.origin, undefined);
    assert.ok(sent.length > 0 && sent.every((s) => !s.includes(SECRET)), 'the page sent the key');
    assert.ok(!(await page.content()).includes(SECRET));
    await page.screenshot({ path: path.join(RESULTS, 'demo-provider.png') });
    assert.deepEqual(page.errors, []);
    await page.context().close();

    // The agent in the SharedWorker (the default) streams through the proxy the same way.
    const inWorker = await openPage(url);
    const fromPage = [];
    inWorker.on('request', (req) => fromPage.push(JSON.stringify(req.headers()) + (req.postData() ?? '')));
    const again = await sendAndWait(inWorker, 'hello again');
    assert.match(await again.locator('.text').textContent(), /offline demo model for wasm-agent/);
    const requests = upstream.requests.filter((r) => r.path.endsWith('/responses'));
    const asked = requests.filter((r) => JSON.stringify(r.body).includes('hello again'));
    assert.ok(asked.length >= 1, 'the worker\'s request reached the provider');
    assert.ok(asked.every((r) => r.headers.authorization === `Bearer ${SECRET}`));
    assert.ok(fromPage.every((s) => !s.includes(SECRET)), 'the page sent the key');
    assert.deepEqual(inWorker.errors, []);
    await inWorker.context().close();
  });

  it('Stop closes the upstream request too', T, async () => {
    const page = await openPage(url);
    const index = upstream.requests.length;
    await page.fill('#input', 'Tell me something long');
    await page.click('#send');
    await page.waitForFunction(
      () => (document.querySelector('.msg.assistant .text')?.textContent.length ?? 0) > 0,
      null,
      { timeout: WAIT },
    );
    await page.click('#stop');
    await page.locator('.msg.assistant[data-done="1"]').waitFor({ timeout: WAIT });
    assert.equal(await page.locator('.msg.assistant .meta').textContent(), 'stopped');
    const record = await upstream.waitForClose(index, WAIT);
    assert.equal(record.finished, false);
    await page.context().close();
  });

  it('refuses other sites and non-JSON posts', T, async () => {
    const before = upstream.requests.length;
    const foreign = await fetch(`${url}proxy/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
      body: '{"model":"echo","messages":[]}',
    });
    assert.equal(foreign.status, 403);
    await foreign.arrayBuffer();
    const plain = await fetch(`${url}proxy/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{"model":"echo","messages":[]}',
    });
    assert.equal(plain.status, 415);
    await plain.arrayBuffer();
    assert.equal(upstream.requests.length, before, 'a refused request reached the provider');
  });
});
