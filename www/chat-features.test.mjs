// The chat page's message actions (Copy, Regenerate, Edit, times, usage and "Thought for" kept
// after a reload), attachments (paperclip, paste, drop), highlighted code blocks, the thread list
// (groups by date, search, rename) and the structured "Summarise" reply, end to end in Chromium.
// `node --test www/` (needs pkg/ from `./x build`). Screenshots: test-results/features-*.png.

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
  shownThreads,
  useBrowser,
  waitForMessages,
} from './page-harness.mjs';

useBrowser();

const T = { timeout: 90_000 };

let url;
before(async () => {
  ({ url } = await serve(childEnv()));
});

/** What the reply bars show: `{ role, time, buttons }` per message (visible buttons only). */
function bars(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('#messages .msg')].map((m) => ({
      role: m.dataset.role,
      time: m.querySelector('.msg-bar time')?.getAttribute('datetime') ?? null,
      buttons: [...m.querySelectorAll('.msg-bar button')].filter((b) => !b.hidden).map((b) => b.textContent),
    })),
  );
}

/** The requests of the model server whose last user message is `said`. */
async function requestsFor(said) {
  return (await modelRequests(url)).filter((r) => promptOf(r).filter((m) => m.role === 'user').at(-1)?.text === said);
}

describe('chat page: its modules', () => {
  it('serves the page modules and stylesheet, not the offline scripts or tests', T, async () => {
    for (const [file, type] of [
      ['message-actions.js', 'text/javascript'],
      ['attachments.js', 'text/javascript'],
      ['highlight.js', 'text/javascript'],
      ['threads.js', 'text/javascript'],
      ['summary.js', 'text/javascript'],
      ['widget-extras.css', 'text/css'],
    ]) {
      const res = await fetch(`${url}${file}`);
      assert.equal(res.status, 200, file);
      assert.ok(res.headers.get('content-type').startsWith(type), file);
      await res.arrayBuffer();
    }
    for (const hidden of ['offline-scripts.mjs', 'chat-features.test.mjs', 'highlight.test.mjs']) {
      const res = await fetch(`${url}${hidden}`);
      assert.equal(res.status, 404, hidden);
      await res.arrayBuffer();
    }
  });
});

describe('chat page: message actions', () => {
  it('Copy, times, usage and "Thought for" kept after a reload', T, async () => {
    const context = await newContext();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(url).origin });
    const page = await openPage(url, context);
    const said = 'hello, tell me about copy buttons';
    const reply = await sendAndWait(page, said);
    const shown = {
      thought: await reply.locator('.thinking > summary').textContent(),
      usage: await reply.locator('.meta').textContent(),
      text: await reply.locator('.text').textContent(),
    };
    assert.match(shown.thought, /^Thought for (under a second|\d+\.\d s)$/);
    assert.match(shown.usage, /^\d+ in · \d+ out · (\d+ reasoning · )?\d+ total tokens$/);
    await reply.locator('.trace-reply').waitFor({ timeout: WAIT }); // once its spans arrived
    const before = await bars(page);
    assert.deepEqual(
      before.map((b) => [b.role, b.buttons]),
      [
        ['user', ['Copy', 'Edit']],
        ['assistant', ['Copy', 'Regenerate', 'Trace']],
      ],
    );
    for (const b of before) assert.ok(Math.abs(Date.parse(b.time) - Date.now()) < 60_000, `time ${b.time}`);
    assert.match(await page.locator('.msg.user .msg-time').textContent(), /\d{1,2}:\d{2}/);

    // Copy puts the reply's markdown on the clipboard and says so.
    await reply.locator('.msg-bar .copy-message').click();
    await page.waitForFunction(() => document.querySelector('.msg.assistant .copy-message')?.textContent === 'Copied');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), shown.text);
    await page.screenshot({ path: path.join(RESULTS, 'features-copied.png') });
    await page.locator('.msg.user .copy-message').click();
    await page.waitForFunction(() => document.querySelector('.msg.user .copy-message')?.textContent === 'Copied');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), said);

    // After a reload: the same times, the same usage line and "Thought for" (the page keeps them).
    await reload(page);
    await waitForMessages(page, 2);
    const again = page.locator('.msg.assistant').last();
    assert.equal(await again.locator('.thinking > summary').textContent(), shown.thought);
    assert.equal(await again.locator('.meta').textContent(), shown.usage);
    // (Memory's times: when each message was stored, within moments of the ones shown live.)
    const after = await bars(page);
    assert.equal(after.length, 2);
    after.forEach((b, i) => assert.ok(Math.abs(Date.parse(b.time) - Date.parse(before[i].time)) < 10_000, `${b.time} vs ${before[i].time}`));
    assert.deepEqual(page.errors, []);
    await context.close();
  });

  it('Regenerate replaces the last reply with a new run of the same message', T, async () => {
    const page = await openPage(`${url}?model=demo:2`);
    await sendAndWait(page, 'first message');
    const said = 'second message to regenerate';
    const reply = await sendAndWait(page, said);
    const firstId = await reply.getAttribute('data-message-id');
    await reply.locator('.trace-reply').waitFor({ timeout: WAIT });
    // Only the last reply can be regenerated (and has the Trace view of its run).
    assert.deepEqual(
      (await bars(page)).map((b) => b.buttons),
      [['Copy', 'Edit'], ['Copy'], ['Copy', 'Edit'], ['Copy', 'Regenerate', 'Trace']],
    );
    await reply.locator('.regenerate').click();
    await page.waitForFunction(
      (old) => {
        const last = [...document.querySelectorAll('.msg.assistant')].at(-1);
        return last?.dataset.done === '1' && last.dataset.messageId && last.dataset.messageId !== old;
      },
      firstId,
      { timeout: WAIT },
    );
    await waitForMessages(page, 4);
    const shown = await shownMessages(page);
    assert.deepEqual(
      shown.map((m) => m.role),
      ['user', 'assistant', 'user', 'assistant'],
    );
    assert.equal(shown[2].text, said);
    assert.match(shown[3].text, /second message to regenerate/);
    // The second run was asked without the first reply: one earlier exchange, then the message.
    const runs = await requestsFor(said);
    assert.equal(runs.length, 2);
    assert.deepEqual(
      promptOf(runs[1]).map((m) => m.role),
      ['user', 'assistant', 'user'],
    );
    await page.screenshot({ path: path.join(RESULTS, 'features-regenerated.png') });
    await reload(page);
    await waitForMessages(page, 4);
    assert.deepEqual(await shownMessages(page), shown);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('Edit and resend replaces that message and every later one', T, async () => {
    const page = await openPage(`${url}?model=demo:2`);
    await sendAndWait(page, 'a question about Lisbon');
    await sendAndWait(page, 'a follow-up about Porto');
    await waitForMessages(page, 4);
    await page.locator('.msg.user').first().locator('.edit-message').click();
    const editor = page.locator('.msg.user').first().locator('.edit-input');
    assert.equal(await editor.inputValue(), 'a question about Lisbon');
    await editor.fill('a question about Madrid instead');
    await page.screenshot({ path: path.join(RESULTS, 'features-editing.png') });
    await page.locator('.msg.user').first().locator('.edit-send').click();
    await page.waitForFunction(() => document.querySelector('.msg.user .bubble')?.textContent === 'a question about Madrid instead');
    await waitForMessages(page, 2);
    const shown = await shownMessages(page);
    assert.equal(shown[0].text, 'a question about Madrid instead');
    assert.match(shown[1].text, /Madrid instead/);
    assert.deepEqual(promptOf((await requestsFor('a question about Madrid instead'))[0]).map((m) => m.role), ['user']);
    await reload(page);
    await waitForMessages(page, 2);
    assert.deepEqual(await shownMessages(page), shown);

    // Esc leaves the editor without sending.
    await page.locator('.msg.user .edit-message').click();
    await page.locator('.edit-input').fill('never sent');
    await page.locator('.edit-input').press('Escape');
    assert.equal(await page.locator('.msg-editor').count(), 0);
    assert.equal(await page.locator('.msg.user .bubble').textContent(), 'a question about Madrid instead');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

// A 1×1 PNG.
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const PNG_BYTES = Buffer.from(PNG_BASE64, 'base64').length; // 70

describe('chat page: attachments', () => {
  it('paperclip, paste and drop add previews; they go out as parts and stay after a reload', T, async () => {
    const page = await openPage(url);
    // The paperclip opens the file picker.
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.click('#attach')]);
    await chooser.setFiles([{ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello notes\n') }]);
    await page.waitForFunction(() => document.querySelectorAll('#attachment-tray .attachment').length === 1);
    // A pasted image (a screenshot from the clipboard).
    await page.evaluate((b64) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const data = new DataTransfer();
      data.items.add(new File([bytes], 'pixel.png', { type: 'image/png' }));
      document.getElementById('input').dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    }, PNG_BASE64);
    await page.waitForFunction(() => document.querySelectorAll('#attachment-tray .attachment').length === 2);
    // A file dropped on the composer.
    await page.evaluate(() => {
      const data = new DataTransfer();
      data.items.add(new File(['{"a":1}'], 'data.json', { type: 'application/json' }));
      const form = document.getElementById('composer');
      form.dispatchEvent(new DragEvent('dragover', { dataTransfer: data, bubbles: true, cancelable: true }));
      form.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    });
    await page.waitForFunction(() => document.querySelectorAll('#attachment-tray .attachment').length === 3);
    const tray = await page.evaluate(() =>
      [...document.querySelectorAll('#attachment-tray .attachment')].map((a) => ({
        name: a.querySelector('.attachment-name').textContent,
        info: a.querySelector('.attachment-info').textContent,
        img: a.querySelector('img')?.getAttribute('src')?.slice(0, 22) ?? null,
      })),
    );
    assert.deepEqual(tray, [
      { name: 'notes.txt', info: 'text/plain · 12 B', img: null },
      { name: 'pixel.png', info: `image/png · ${PNG_BYTES} B`, img: 'data:image/png;base64,' },
      { name: 'data.json', info: 'application/json · 7 B', img: null },
    ]);
    // × removes one.
    await page.click('#attachment-tray .attachment:nth-child(3) .attachment-remove');
    await page.waitForFunction(() => document.querySelectorAll('#attachment-tray .attachment').length === 2);
    await page.screenshot({ path: path.join(RESULTS, 'features-attachments-composer.png') });

    const said = 'what did I attach?';
    const reply = await sendAndWait(page, said);
    assert.equal(await page.isHidden('#attachment-tray'), true);
    const text = await reply.locator('.text').textContent();
    assert.match(text, /I received 2 attachments: the file “notes\.txt” \(text\/plain, 12 bytes\), an image \(image\/png, 70 bytes\)\./);
    assert.match(text, /what did I attach\?/);
    // What the model was sent: a text part, a file part and an image part.
    const [request] = await requestsFor(said);
    const content = request.body.messages.at(-1).content;
    assert.deepEqual(
      content.map((p) => p.type),
      ['text', 'file', 'image_url'],
    );
    assert.equal(content[1].file.filename, 'notes.txt');
    assert.equal(content[1].file.file_data, `data:text/plain;base64,${Buffer.from('hello notes\n').toString('base64')}`);
    assert.equal(content[2].image_url.url, `data:image/png;base64,${PNG_BASE64}`);

    const sent = async () =>
      page.evaluate(() =>
        [...document.querySelectorAll('.msg.user .attachments .attachment')].map((a) => ({
          name: a.querySelector('.attachment-name').textContent,
          img: Boolean(a.querySelector('img')?.naturalWidth),
        })),
      );
    const expected = [
      { name: 'notes.txt', img: false },
      { name: 'pixel.png', img: true },
    ];
    await page.waitForFunction(() => [...document.querySelectorAll('.msg.user .attachments img')].every((i) => i.complete));
    assert.deepEqual(await sent(), expected);
    assert.equal(await page.locator('.msg.user .bubble').textContent(), said);
    await page.screenshot({ path: path.join(RESULTS, 'features-attachments-sent.png') });
    await reload(page);
    await waitForMessages(page, 2);
    await page.waitForFunction(() => [...document.querySelectorAll('.msg.user .attachments img')].every((i) => i.complete));
    assert.deepEqual(await sent(), expected);

    // Regenerate sends the attachments again.
    const firstId = await page.locator('.msg.assistant').getAttribute('data-message-id');
    await page.locator('.msg.assistant .regenerate').click();
    await page.waitForFunction(
      (old) => {
        const last = document.querySelector('.msg.assistant');
        return last?.dataset.done === '1' && last.dataset.messageId && last.dataset.messageId !== old;
      },
      firstId,
    );
    await waitForMessages(page, 2);
    assert.equal(await page.locator('.msg.user .attachments .attachment').count(), 2);
    const runs = await requestsFor(said);
    assert.equal(runs.length, 2);
    assert.deepEqual(
      runs[1].body.messages.at(-1).content.map((p) => p.type),
      ['text', 'file', 'image_url'],
    );
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

describe('chat page: code highlighting', () => {
  it('loads the highlighter only once a code block shows, and colours it without changing its text', T, async () => {
    const page = await openPage(`${url}?model=slow:3`);
    const loaded = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname === '/highlight.js') loaded.push(r.url());
    });
    await sendAndWait(page, 'no code in this one');
    assert.deepEqual(loaded, [], 'highlight.js was loaded without a code block');
    const code = ['def greet(name):', '    # say hello', '    return f"Hello, {name}!" if name else None', '', 'print(greet("Ada"), 42)'].join('\n');
    const reply = await sendAndWait(page, ['Some code:', '', '```python', code, '```', '', '```rust', 'fn main() { let n: u32 = 7; println!("{n}"); }', '```'].join('\n'));
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant .code-block.highlighted').length === 2);
    assert.equal(loaded.length, 1);
    const blocks = reply.locator('pre > code');
    assert.equal(await blocks.first().textContent(), code);
    const tokens = (i) =>
      blocks.nth(i).evaluate((c) => [...c.querySelectorAll('span')].map((s) => `${s.className.slice(4)}:${s.textContent}`));
    const py = await tokens(0);
    for (const t of ['kw:def', 'fn:greet', 'com:# say hello', 'kw:return', 'str:f"Hello, {name}!"', 'lit:None', 'num:42', 'str:"Ada"']) {
      assert.ok(py.includes(t), `${t} in ${JSON.stringify(py)}`);
    }
    const rs = await tokens(1);
    for (const t of ['kw:fn', 'kw:let', 'fn:println!', 'num:7', 'str:"{n}"']) assert.ok(rs.includes(t), `${t} in ${JSON.stringify(rs)}`);
    // Coloured: a keyword does not have the colour of plain code.
    const colours = await blocks.first().evaluate((c) => ({
      plain: getComputedStyle(c).color,
      keyword: getComputedStyle(c.querySelector('.tok-kw')).color,
    }));
    assert.notEqual(colours.keyword, colours.plain);
    await page.screenshot({ path: path.join(RESULTS, 'features-code.png') });
    // The copy button still copies the plain code.
    await reload(page);
    await waitForMessages(page, 4);
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant .code-block.highlighted').length === 2);
    assert.deepEqual(await tokens(0), py);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

/** Sets `updatedAt` of the stored thread `id` to `daysAgo` days before now (IndexedDB, as if it were older). */
function ageThread(page, id, daysAgo) {
  return page.evaluate(
    async ({ id, daysAgo }) => {
      const request = (r) =>
        new Promise((resolve, reject) => {
          r.onsuccess = () => resolve(r.result);
          r.onerror = () => reject(r.error);
        });
      const db = await request(indexedDB.open('wasm-agent'));
      const tx = db.transaction('threads', 'readwrite');
      const store = tx.objectStore('threads');
      const thread = await request(store.get(id));
      const at = new Date(Date.now() - daysAgo * 86_400_000);
      thread.updatedAt = typeof thread.updatedAt === 'number' ? at.getTime() : at.toISOString();
      await request(store.put(thread));
      db.close();
    },
    { id, daysAgo },
  );
}

describe('chat page: thread list', () => {
  it('groups threads by date, searches titles and messages, and renames in place', T, async () => {
    const page = await openPage(`${url}?model=echo`);
    const topics = ['planning a trip to Lisbon', 'a recipe for banana bread', 'fixing a bicycle chain', 'notes on Rust lifetimes'];
    for (const [i, topic] of topics.entries()) {
      if (i) {
        await page.click('#new-chat');
        await waitForMessages(page, 0);
      }
      await sendAndWait(page, topic);
    }
    await page.waitForFunction(() => document.querySelectorAll('#threads .thread-time:not(:empty)').length === 4);
    const ids = Object.fromEntries((await shownThreads(page)).map((t) => [t.label, t.id]));
    await ageThread(page, ids[topics[0]], 40);
    await ageThread(page, ids[topics[1]], 3);
    await ageThread(page, ids[topics[2]], 1);
    await reload(page);
    const layout = () =>
      page.evaluate(() =>
        [...document.querySelectorAll('#threads > li')].map((li) => (li.classList.contains('thread-group') ? `# ${li.textContent}` : li.querySelector('.thread-title').textContent)),
      );
    assert.deepEqual(await layout(), [
      '# Today',
      topics[3],
      '# Yesterday',
      topics[2],
      '# Previous 7 days',
      topics[1],
      '# Older',
      topics[0],
    ]);
    await page.screenshot({ path: path.join(RESULTS, 'features-thread-groups.png') });

    // Search: by words of the messages (the echo replies too) and of titles.
    await page.fill('#thread-search', 'BANANA');
    await page.waitForFunction(() => document.querySelectorAll('#threads .thread-item').length === 1);
    assert.deepEqual(await layout(), ['# Previous 7 days', topics[1]]);
    await page.fill('#thread-search', 'you said chain');
    await page.waitForFunction(() => document.querySelector('#threads .thread-item .thread-title')?.textContent === 'fixing a bicycle chain');
    assert.equal(await page.locator('#threads .thread-item').count(), 1);
    await page.fill('#thread-search', 'nothing like this');
    await page.waitForFunction(() => document.querySelectorAll('#threads .thread-item').length === 0);
    assert.match(await page.textContent('#threads'), /No conversation matches “nothing like this”/);
    await page.fill('#thread-search', '');
    await page.waitForFunction(() => document.querySelectorAll('#threads .thread-item').length === 4);

    // Rename: ✎, type, Enter; stored through memory (the title survives a reload and is searchable).
    const item = page.locator(`#threads li[data-thread-id="${ids[topics[0]]}"]`);
    await item.hover();
    await item.locator('.thread-rename').click();
    const field = item.locator('.thread-rename-input');
    assert.equal(await field.inputValue(), topics[0]);
    await field.fill('Lisbon holiday');
    await page.screenshot({ path: path.join(RESULTS, 'features-thread-rename.png') });
    await field.press('Enter');
    await page.waitForFunction((id) => document.querySelector(`#threads li[data-thread-id="${id}"] .thread-title`)?.textContent === 'Lisbon holiday', ids[topics[0]]);
    // Esc cancels a rename.
    const other = page.locator(`#threads li[data-thread-id="${ids[topics[1]]}"]`);
    await other.hover();
    await other.locator('.thread-rename').click();
    await other.locator('.thread-rename-input').fill('not kept');
    await other.locator('.thread-rename-input').press('Escape');
    assert.equal(await other.locator('.thread-title').textContent(), topics[1]);

    await reload(page);
    const labels = (await shownThreads(page)).map((t) => t.label);
    assert.ok(labels.includes('Lisbon holiday'), JSON.stringify(labels));
    assert.ok(labels.includes(topics[1]));
    assert.ok(!labels.includes(topics[0]));
    const stored = await page.evaluate(async (id) => {
      const { Memory } = await import('/pkg/index.browser.js');
      return (await new Memory().getThreadById({ threadId: id }))?.title;
    }, ids[topics[0]]);
    assert.equal(stored, 'Lisbon holiday');
    await page.fill('#thread-search', 'holiday');
    await page.waitForFunction(() => document.querySelectorAll('#threads .thread-item').length === 1);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

describe('chat page: structured summary (issue 12)', () => {
  it('"Summarise" shows { title, bullets } filling in while it streams, then the final object', T, async () => {
    const page = await openPage(`${url}?model=echo`);
    await sendAndWait(page, 'how do I bake sourdough bread at home');
    await sendAndWait(page, 'and how long should the dough rest');
    await page.evaluate(() => {
      window.__summary = [];
      new MutationObserver(() => {
        const card = document.querySelector('.summary-card');
        if (!card) return;
        const state = {
          state: card.dataset.state,
          title: card.querySelector('.summary-title').textContent,
          bullets: [...card.querySelectorAll('.summary-bullets li')].map((li) => li.textContent),
        };
        if (JSON.stringify(state) !== JSON.stringify(window.__summary.at(-1))) window.__summary.push(state);
      }).observe(document.getElementById('messages'), { subtree: true, childList: true, characterData: true, attributes: true });
    });
    await page.click('#summarise');
    await page.waitForFunction(() => document.querySelector('.summary-card')?.dataset.state === 'done', null, { timeout: WAIT });
    const final = {
      title: 'About “how do I bake sourdough bread at home”',
      bullets: [
        'The user said “how do I bake sourdough bread at home” and the offline model restated it.',
        'The user said “and how long should the dough rest” and the offline model restated it.',
      ],
    };
    const card = page.locator('.summary-card');
    assert.equal(await card.locator('.summary-title').textContent(), final.title);
    assert.deepEqual(await card.locator('.summary-bullets li').allTextContents(), final.bullets);
    await page.screenshot({ path: path.join(RESULTS, 'features-summary.png') });

    const states = await page.evaluate(() => window.__summary);
    const streaming = states.filter((s) => s.state === 'streaming');
    // Partial states came first: a title cut short, then the bullets one by one.
    assert.ok(streaming.length >= 5, `${streaming.length} partial states`);
    assert.ok(
      streaming.some((s) => s.title !== '' && s.title !== final.title && final.title.startsWith(s.title)),
      'no partial title',
    );
    assert.ok(
      streaming.some((s) => s.title === final.title && s.bullets.length === 1),
      'no state with one bullet',
    );
    for (const s of streaming) assert.ok(final.title.startsWith(s.title), `${s.title} is not a prefix`);
    assert.deepEqual(states.at(-1), { state: 'done', ...final });
    // The call asked for the schema, and the conversation is unchanged (the summary is not stored).
    const [request] = (await modelRequests(url)).filter((r) => r.headers['x-script'] === 'summary');
    assert.deepEqual(Object.keys(request.body.response_format.json_schema.schema.properties), ['title', 'bullets']);

    // Closing the card while it streams stops the call.
    await page.click('#summarise');
    await page.waitForFunction(() => document.querySelector('.summary-card .summary-title')?.textContent.length > 3);
    await page.click('.summary-close');
    assert.equal(await page.locator('.summary-card').count(), 0);
    await page.waitForFunction(() => !document.getElementById('summarise').disabled);
    // (The model server notes the closed connection as soon as it sees it.)
    let runs = [];
    for (let i = 0; i < 50; i++) {
      runs = (await modelRequests(url)).filter((r) => r.headers['x-script'] === 'summary');
      if (runs[1]?.closedByClient) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(runs.length, 2);
    assert.equal(runs[1].closedByClient, true, 'the summary request was not stopped');
    assert.equal(runs[1].finished, false);

    await reload(page);
    await waitForMessages(page, 4);
    assert.equal(await page.locator('.summary-card').count(), 0);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
