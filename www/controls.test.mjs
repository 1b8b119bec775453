// The chat page's controls around a reply: Esc stops it, a scroll-to-bottom button when the
// reader scrolled up, suggestion chips that send, errors with Retry and Open settings (a blocked
// or unreachable endpoint said in words, a failed send kept over a reload), and tool-call
// arguments that wrap on a phone-sized screen.
// `node --test www/controls.test.mjs` (needs pkg/ and Chromium). Screenshots: test-results/controls-*.png.

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

const T = { timeout: 90_000 };

/** How far the conversation is from its end, in pixels. */
function distanceFromEnd(page) {
  return page.evaluate(() => {
    const m = document.getElementById('messages');
    return m.scrollHeight - m.scrollTop - m.clientHeight;
  });
}

/** Waits until the conversation stops scrolling (a wheel scroll may be animated); its scrollTop. */
async function settledScrollTop(page) {
  let last = null;
  for (;;) {
    const top = await page.evaluate(() => document.getElementById('messages').scrollTop);
    if (top === last) return top;
    last = top;
    await page.waitForTimeout(120);
  }
}

/** Points Settings at a provider whose base URL is `baseUrl` (with a key), and saves. */
async function useProvider(page, baseUrl) {
  await page.click('#settings-button');
  await page.locator('#settings[open]').waitFor({ timeout: WAIT });
  await page.selectOption('#set-provider', 'groq');
  await page.fill('#set-model', 'echo');
  await page.fill('#set-url', baseUrl);
  await page.fill('#set-key', 'gsk-controls-test');
  await page.click('#set-save');
  await page.locator('#settings:not([open])').waitFor({ state: 'attached', timeout: WAIT });
}

describe('chat page: Esc, scroll-to-bottom, suggestions', () => {
  let url;
  before(async () => {
    ({ url } = await serve(childEnv()));
  });

  it('Esc stops a streaming reply, like Stop; the reply stays stopped after a reload', T, async () => {
    const page = await openPage(`${url}?model=slow:60`);
    const said = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
    await page.fill('#input', said);
    await page.press('#input', 'Enter');
    const reply = page.locator('.msg.assistant').last();
    await page.waitForFunction(() => (document.querySelector('.msg.assistant .text')?.textContent ?? '').includes('word3'));
    assert.equal(await page.isEnabled('#stop'), true);
    await page.keyboard.press('Escape');
    await page.locator('.msg.assistant[data-done="1"]').waitFor({ timeout: WAIT });
    assert.equal(await reply.getAttribute('class'), 'msg assistant stopped');
    assert.equal(await reply.locator('.meta').textContent(), 'stopped');
    const text = await reply.locator('.text').textContent();
    assert.ok(text.startsWith('You said: word0 word1 word2 word3'), text);
    assert.ok(!text.includes('word39'), `the whole reply arrived: ${text}`);
    assert.equal(await page.isEnabled('#stop'), false);
    assert.equal(await page.isEnabled('#send'), true);
    await page.screenshot({ path: path.join(RESULTS, 'controls-esc-stopped.png') });

    // Esc with nothing streaming changes nothing; the next message is answered in full.
    await page.keyboard.press('Escape');
    const next = await sendAndWait(page, 'after the stop');
    assert.equal(await next.locator('.text').textContent(), 'You said: after the stop');

    await reload(page);
    await waitForMessages(page, 4);
    assert.equal(await page.locator('.msg.assistant').first().getAttribute('class'), 'msg assistant stopped');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('scrolled up during a long reply: a scroll-to-bottom button shows, the reply stops following, a click goes to the end', T, async () => {
    const page = await openPage(`${url}?model=slow:12`);
    assert.equal(await page.isVisible('#jump'), false, 'the button shows on an empty page');
    const said = Array.from({ length: 70 }, (_, i) => `line ${i}`).join('\n');
    await page.fill('#input', said);
    await page.press('#input', 'Enter');
    // While it streams: the reader scrolls up with the mouse wheel.
    await page.waitForFunction(() => (document.querySelector('.msg.assistant .text')?.textContent ?? '').includes('line 30'));
    const box = await page.locator('#messages').boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, -1500);
    await page.locator('#jump').waitFor({ state: 'visible', timeout: WAIT });
    assert.equal(await page.locator('.msg.assistant[data-done="1"]').count(), 0, 'the reply ended before the test scrolled');
    const top = await settledScrollTop(page);
    await page.screenshot({ path: path.join(RESULTS, 'controls-jump-streaming.png') });

    // The reply goes on without pulling the reader down.
    await page.locator('.msg.assistant[data-done="1"]').waitFor({ timeout: WAIT });
    assert.ok((await reply(page)).includes('line 69'));
    assert.equal(await page.evaluate(() => document.getElementById('messages').scrollTop), top, 'the page followed the reply');
    assert.ok((await distanceFromEnd(page)) > 300);
    assert.equal(await page.isVisible('#jump'), true);

    await page.click('#jump');
    assert.ok((await distanceFromEnd(page)) < 2, 'not at the end after the click');
    await page.locator('#jump').waitFor({ state: 'hidden', timeout: WAIT });
    assert.equal(await page.evaluate(() => document.activeElement.id), 'input');
    await page.screenshot({ path: path.join(RESULTS, 'controls-jump-end.png') });

    // After a reload (drawn at the end): scrolling up shows it again; it takes the reader back.
    await reload(page);
    await waitForMessages(page, 2);
    assert.equal(await page.isVisible('#jump'), false);
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, -800);
    await page.locator('#jump').waitFor({ state: 'visible', timeout: WAIT });
    await page.click('#jump');
    assert.ok((await distanceFromEnd(page)) < 2);
    await page.locator('#jump').waitFor({ state: 'hidden', timeout: WAIT });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('suggestion chips on an empty conversation send their text; New chat shows them again', T, async () => {
    const page = await openPage(`${url}?research=50`);
    const chips = page.locator('#suggestions .chip');
    assert.deepEqual(await chips.allTextContents(), ['Hello!', 'What time is it?', 'Research solana', 'Ask the writer about the sea']);
    await page.screenshot({ path: path.join(RESULTS, 'controls-chips.png') });

    await chips.nth(1).click();
    await page.locator('.msg.assistant[data-done="1"]').waitFor({ timeout: WAIT });
    const [user, assistant] = await shownMessages(page);
    assert.deepEqual(user, { role: 'user', text: 'What time is it?' });
    assert.match(assistant.text, /^The tool said: /);
    assert.equal(await page.locator('.tool-card[data-state="done"] .tool-name').textContent(), 'clock');
    assert.equal(await chips.first().isVisible(), false, 'the chips stay over a conversation');

    await page.click('#new-chat');
    await waitForMessages(page, 0);
    assert.equal(await chips.first().isVisible(), true);
    // By keyboard: a focused chip, Enter.
    await chips.first().focus();
    await page.keyboard.press('Enter');
    await page.locator('.msg.assistant[data-done="1"]').waitFor({ timeout: WAIT });
    assert.equal((await shownMessages(page))[0].text, 'Hello!');
    assert.match((await shownMessages(page))[1].text, /^Hello! I'm the offline demo model/);

    await page.click('#new-chat');
    await chips.nth(2).click();
    await page.locator('.msg.assistant[data-done="1"]').waitFor({ timeout: WAIT });
    assert.equal(await page.locator('.tool-card .tool-name').textContent(), 'research');
    assert.match(await page.locator('.msg.assistant .text').textContent(), /The background task research finished: solana/);

    // Another model gets general suggestions.
    const other = await openPage(`${url}?model=echo`);
    assert.deepEqual(await other.locator('#suggestions .chip').allTextContents(), [
      'Explain WebAssembly in two sentences',
      'What time is it in Tokyo?',
      'Write a haiku about Rust',
    ]);
    await other.locator('#suggestions .chip').first().click();
    await other.locator('.msg.assistant[data-done="1"]').waitFor({ timeout: WAIT });
    assert.equal(await other.locator('.msg.assistant .text').textContent(), 'You said: Explain WebAssembly in two sentences');
    assert.deepEqual(page.errors, []);
    assert.deepEqual(other.errors, []);
    await other.context().close();
    await page.context().close();
  });
});

/** The newest reply's text. */
function reply(page) {
  return page.locator('.msg.assistant').last().locator('.text').textContent();
}

describe('chat page: errors', () => {
  let url;
  before(async () => {
    ({ url } = await serve(childEnv()));
  });

  it('a failed reply has Retry and Open settings; it survives a reload; Retry sends the same message once', T, async () => {
    const context = await newContext();
    const page = await openPage(`${url}?model=error-401`, context);
    const said = 'hello from the retry test';
    const failed = await sendAndWait(page, said);
    assert.match(await failed.locator('.error-text').textContent(), /Incorrect API key/);
    assert.deepEqual(await failed.locator('.error button').allTextContents(), ['Retry', 'Open settings']);
    await page.screenshot({ path: path.join(RESULTS, 'controls-error.png') });

    await failed.locator('.open-settings').click();
    await page.locator('#settings[open]').waitFor({ timeout: WAIT });
    await page.click('#set-cancel');

    // Retry against the same failing model: it fails again, the user message is not repeated.
    await failed.locator('.retry').click();
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant.failed[data-done="1"] .retry').length === 1);
    assert.deepEqual((await shownMessages(page)).map((m) => m.role), ['user', 'assistant']);

    // A reload: the message is shown failed, with its error and Retry.
    await reload(page);
    await waitForMessages(page, 2);
    const restored = page.locator('.msg.assistant.failed');
    assert.equal((await shownMessages(page))[0].text, said);
    assert.match(await restored.locator('.error-text').textContent(), /Incorrect API key/);
    assert.equal(await restored.locator('.retry').count(), 1);
    await page.screenshot({ path: path.join(RESULTS, 'controls-error-reloaded.png') });

    // The same conversation with a model that answers: Retry sends the message again.
    await page.goto(`${url}?model=echo`);
    await page.waitForSelector('body[data-ready="1"]');
    await waitForMessages(page, 2);
    await page.locator('.msg.assistant.failed .retry').click();
    await page.waitForFunction(() => document.querySelector('.msg.assistant[data-done="1"]:not(.failed)'));
    assert.deepEqual(await shownMessages(page), [
      { role: 'user', text: said },
      { role: 'assistant', text: `You said: ${said}` },
    ]);
    // The model saw the message once (the failed runs kept it; the retry did not add it again).
    const requests = (await modelRequests(url)).filter((r) => promptOf(r).some((m) => m.text === said));
    assert.deepEqual(promptOf(requests.at(-1)), [{ role: 'user', text: said }]);
    await page.screenshot({ path: path.join(RESULTS, 'controls-error-retried.png') });

    await reload(page);
    await waitForMessages(page, 2);
    assert.deepEqual(await shownMessages(page), [
      { role: 'user', text: said },
      { role: 'assistant', text: `You said: ${said}` },
    ]);
    assert.equal(await page.locator('.msg.failed').count(), 0, 'the failure came back after it was retried');
    assert.deepEqual(page.errors, []);
    await context.close();
  });

  it('a reply that broke off mid-way keeps its text and gets Retry, after a reload too; Retry replaces it (on screen and in memory)', T, async () => {
    const page = await openPage(`${url}?model=in-stream-error`);
    const said = 'tell me a story';
    const failed = await sendAndWait(page, said);
    const partial = await failed.locator('.text').textContent();
    assert.ok(partial.length > 0, 'no text before the error');
    assert.match(await failed.locator('.error-text').textContent(), /error while processing/);
    assert.deepEqual(await failed.locator('.error button').allTextContents(), ['Retry', 'Open settings']);

    await reload(page);
    await waitForMessages(page, 2);
    const restored = page.locator('.msg.assistant');
    assert.equal(await restored.locator('.text').textContent(), partial);
    assert.match(await restored.locator('.error-text').textContent(), /error while processing/);
    await page.screenshot({ path: path.join(RESULTS, 'controls-error-midway-reloaded.png') });

    await page.goto(`${url}?model=echo`);
    await page.waitForSelector('body[data-ready="1"]');
    await waitForMessages(page, 2);
    await page.locator('.msg.assistant .retry').click();
    await page.waitForFunction(() => document.querySelector('.msg.assistant[data-done="1"] .text')?.textContent.startsWith('You said'));
    const shown = await shownMessages(page);
    assert.deepEqual(shown, [
      { role: 'user', text: said },
      { role: 'assistant', text: `You said: ${said}` },
    ], 'the broken-off reply is replaced, the message not sent twice');
    assert.equal(await page.locator('.retry').count(), 0, 'the first failure still offers Retry');
    await reload(page);
    await waitForMessages(page, 2);
    assert.deepEqual(await shownMessages(page), shown);
    assert.equal(await page.locator('.retry').count(), 0);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('an endpoint the page may not reach, or that does not answer, is said in words, not "Failed to fetch"', T, async () => {
    const page = await openPage(url);
    // connect-src allows https:, this origin, the model server and local ports: not this host.
    await useProvider(page, 'http://blocked.invalid/v1');
    const blocked = await sendAndWait(page, 'are you there?');
    const words = await blocked.locator('.error-text').textContent();
    assert.match(words, /^The page's Content-Security-Policy blocked the request to blocked\.invalid/);
    assert.ok(!words.startsWith('Failed to fetch') && !/^Could not reach/.test(words), words);
    assert.deepEqual(await blocked.locator('.error button').allTextContents(), ['Retry', 'Open settings']);
    await page.screenshot({ path: path.join(RESULTS, 'controls-error-csp.png') });

    // Allowed by the policy, but nothing listens there.
    await useProvider(page, 'http://127.0.0.1:9/v1');
    const refused = await sendAndWait(page, 'and now?');
    const refusedWords = await refused.locator('.error-text').textContent();
    assert.match(refusedWords, /^The page's Content-Security-Policy or the network blocked the request to 127\.0\.0\.1:9 /);
    assert.match(refusedWords, /Check the base URL in Settings/);
    await page.screenshot({ path: path.join(RESULTS, 'controls-error-unreachable.png') });

    // Open settings from the error, fix the URL (the local model server), Retry: answered.
    const config = await (await fetch(`${url}config.json`)).json();
    await refused.locator('.open-settings').click();
    await page.locator('#settings[open]').waitFor({ timeout: WAIT });
    await page.fill('#set-url', config.model.url);
    await page.click('#set-save');
    await refused.locator('.retry').click();
    await page.waitForFunction(() => document.querySelector('.msg.assistant:last-child[data-done="1"]:not(.failed)'));
    assert.equal(await reply(page), 'You said: and now?');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

describe('chat page: a phone-sized screen', () => {
  let url;
  before(async () => {
    ({ url } = await serve(childEnv()));
  });

  it('tool-call arguments wrap inside the card instead of being cut off (390×844)', T, async () => {
    const context = await newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    const page = await openPage(`${url}?research=50`, context);
    const topic = 'the history of WebAssembly runtimes in browsers, servers and edge workers';
    await sendAndWait(page, `research ${topic}`);
    const args = page.locator('.tool-card .tool-args');
    assert.equal(await args.textContent(), JSON.stringify({ topic }));
    const fit = await args.evaluate((el) => {
      const card = el.closest('.tool-card').getBoundingClientRect();
      const r = el.getBoundingClientRect();
      return {
        overflow: el.scrollWidth - el.clientWidth,
        lines: Math.round(r.height / parseFloat(getComputedStyle(el).lineHeight || '16')),
        inside: r.left >= card.left && r.right <= card.right + 0.5,
        pageOverflow: document.documentElement.scrollWidth - window.innerWidth,
        ellipsis: getComputedStyle(el).textOverflow,
      };
    });
    assert.ok(fit.overflow <= 0, `the arguments overflow their box by ${fit.overflow}px`);
    assert.ok(fit.lines >= 2, `the arguments are on ${fit.lines} line(s): not wrapped`);
    assert.ok(fit.inside, 'the arguments stick out of the card');
    assert.ok(fit.pageOverflow <= 0, `the page scrolls sideways by ${fit.pageOverflow}px`);
    await page.screenshot({ path: path.join(RESULTS, 'controls-mobile-tool-args.png') });

    // From memory, the same.
    await reload(page);
    await waitForMessages(page, 2);
    assert.equal(await args.textContent(), JSON.stringify({ topic }));
    assert.ok((await args.evaluate((el) => el.scrollWidth - el.clientWidth)) <= 0);
    assert.deepEqual(page.errors, []);
    await context.close();
  });
});
