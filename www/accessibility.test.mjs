// The chat page for keyboard and screen-reader users: axe-core finds nothing serious or critical
// (empty page, a finished conversation with a tool card, the Settings dialog, the refund panel,
// the Trace view; light and dark),
// every text colour reaches 4.5:1 on its background, a reply is announced once when it is done
// (not per streamed word), messages are named articles, aria-busy marks a streaming reply, and
// Tab walks the page in order with a visible focus ring.
// `node --test www/accessibility.test.mjs` (needs pkg/ and Chromium). Screenshots: test-results/a11y-*.png.

import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { RESULTS, ROOT, WAIT, childEnv, newContext, openPage, reload, sendAndWait, serve, useBrowser, waitForMessages } from './page-harness.mjs';

useBrowser();

const T = { timeout: 90_000 };
const AXE = path.join(ROOT, 'node_modules/axe-core/axe.min.js');

/** The page's own Content-Security-Policy would refuse the injected axe script. */
function axeContext() {
  return newContext({ bypassCSP: true });
}

/** axe-core's serious and critical findings on the page as it is: `[{ id, impact, help, targets }]`. */
async function axeFindings(page) {
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations);
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => `${n.target.join(' ')}: ${n.failureSummary}`) }));
}

/**
 * Every visible text node's colour against the colour behind it (the first opaque background of
 * its ancestors, opacity applied): the ones under 4.5:1, as `{ text, ratio, color, class }`.
 */
function lowContrast(page) {
  return page.evaluate(() => {
    const parse = (c) => {
      const m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/.exec(c);
      if (m) return { r: +m[1], g: +m[2], b: +m[3], a: m[4] === undefined ? 1 : +m[4] };
      // color-mix() computes to `color(srgb r g b / a)`, channels 0–1.
      const s = /color\(srgb ([\d.e-]+) ([\d.e-]+) ([\d.e-]+)(?: \/ ([\d.]+))?\)/.exec(c);
      return s ? { r: 255 * s[1], g: 255 * s[2], b: 255 * s[3], a: s[4] === undefined ? 1 : +s[4] } : null;
    };
    const lum = ({ r, g, b }) =>
      [r, g, b]
        .map((v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4))
        .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
    const over = (top, under) => ({
      r: top.r * top.a + under.r * (1 - top.a),
      g: top.g * top.a + under.g * (1 - top.a),
      b: top.b * top.a + under.b * (1 - top.a),
      a: 1,
    });
    const backgroundOf = (el) => {
      const layers = [];
      for (let node = el; node; node = node.parentElement) {
        const bg = parse(getComputedStyle(node).backgroundColor);
        if (bg && bg.a > 0) {
          layers.push(bg);
          if (bg.a === 1) break;
        }
      }
      let color = { r: 255, g: 255, b: 255, a: 1 };
      for (const layer of layers.reverse()) color = over(layer, color);
      return color;
    };
    const opacityOf = (el) => {
      let o = 1;
      for (let node = el; node; node = node.parentElement) o *= Number(getComputedStyle(node).opacity);
      return o;
    };
    const found = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      if (!node.textContent.trim() || !el || el.closest('[hidden], .visually-hidden, :disabled')) continue;
      const rect = el.getBoundingClientRect();
      const style = getComputedStyle(el);
      if (!rect.width || !rect.height || style.visibility !== 'visible') continue;
      const background = backgroundOf(el);
      const fg = parse(style.color);
      const color = over({ ...fg, a: fg.a * opacityOf(el) }, background);
      const [hi, lo] = [lum(color), lum(background)].sort((a, b) => b - a);
      const ratio = (hi + 0.05) / (lo + 0.05);
      if (ratio < 4.5) {
        found.push({ text: node.textContent.trim().slice(0, 40), ratio: Math.round(ratio * 100) / 100, color: style.color, class: el.className });
      }
    }
    return found;
  });
}

/** Checks axe and the contrast of every text, in the light and the dark theme; screenshots both. */
async function assertAccessible(page, name) {
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    assert.deepEqual(await axeFindings(page), [], `${name} (${scheme}): axe-core's serious or critical findings`);
    assert.deepEqual(await lowContrast(page), [], `${name} (${scheme}): text under 4.5:1`);
    await page.screenshot({ path: path.join(RESULTS, `a11y-${name}-${scheme}.png`) });
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

describe('chat page: accessibility', () => {
  let url;
  before(async () => {
    ({ url } = await serve(childEnv()));
  });

  it('axe-core finds nothing serious or critical, and all text is at 4.5:1: empty page, a conversation with a tool card, Settings', T, async () => {
    const page = await openPage(url, await axeContext());
    await assertAccessible(page, 'empty');

    // A finished conversation with a tool card (the clock tool), a greeting, and a hover over
    // the thread list (its hover background is the darkest behind the sidebar's small text).
    await sendAndWait(page, 'What time is it?');
    await sendAndWait(page, 'hello');
    assert.equal(await page.locator('.tool-card[data-state="done"]').count(), 1);
    await page.locator('.thread-item.current').hover();
    await assertAccessible(page, 'conversation');

    // Drawn from memory, the same.
    await reload(page);
    await waitForMessages(page, 4);
    await page.locator('.thread-item.current').hover();
    await assertAccessible(page, 'restored');

    await page.click('#settings-button');
    await page.locator('#settings[open]').waitFor({ timeout: WAIT });
    await assertAccessible(page, 'settings-offline');
    await page.selectOption('#set-provider', 'groq');
    await assertAccessible(page, 'settings-provider');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('the other states pass too: a failed tool call, one waiting for approval, a declined one, a stopped reply, code and links', T, async () => {
    const context = await axeContext();
    const failing = await openPage(`${url}?model=tool-call`, context);
    await sendAndWait(failing, 'call a tool');
    assert.equal(await failing.locator('.tool-card[data-state="failed"]').count(), 1);
    await assertAccessible(failing, 'tool-failed');
    await failing.close();

    const page = await openPage(`${url}?model=call:clock&approve=1`, await axeContext());
    await page.fill('#input', 'what time is it, with approval');
    await page.press('#input', 'Enter');
    await page.locator('.tool-card .approve').waitFor({ timeout: WAIT });
    assert.equal(await page.textContent('#announcer'), 'The clock tool waits for your approval.');
    await assertAccessible(page, 'tool-approval');
    await page.locator('.tool-card .decline').click();
    await page.locator('.msg.assistant[data-done="1"]').waitFor({ timeout: WAIT });
    assert.equal(await page.locator('.tool-card[data-state="denied"]').count(), 1);
    await assertAccessible(page, 'tool-declined');
    await page.context().close();

    const echo = await openPage(`${url}?model=slow:40`, context); // (the thread of `failing`, going on)
    await sendAndWait(echo, 'Some `code`, a [link](https://example.com/docs) and\n\n```js\nconst answer = 42;\n```');
    await echo.fill('#input', Array.from({ length: 30 }, (_, i) => `word${i}`).join(' '));
    await echo.press('#input', 'Enter');
    await echo.waitForFunction(() => /word2/.test([...document.querySelectorAll('.msg.assistant .text')].at(-1)?.textContent ?? ''));
    await echo.click('#stop');
    await echo.locator('.msg.assistant.stopped[data-done="1"]').waitFor({ timeout: WAIT });
    await assertAccessible(echo, 'code-and-stopped');
    assert.deepEqual([...failing.errors, ...page.errors, ...echo.errors], []);
    await context.close();
  });

  it('on a phone-sized screen (390×844) too: the page, the open conversation list, a tool card', T, async () => {
    const context = await newContext({ bypassCSP: true, viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const page = await openPage(`${url}?research=50`, context);
    await assertAccessible(page, 'phone-empty');
    // Every control of the header is on the screen (none pushed past its right edge).
    const header = await page.evaluate(() =>
      [...document.querySelectorAll('.top button')]
        .filter((b) => getComputedStyle(b).display !== 'none')
        .map((b) => ({ id: b.id, left: b.getBoundingClientRect().left, right: b.getBoundingClientRect().right })),
    );
    assert.deepEqual(header.map((b) => b.id), ['menu', 'summarise', 'refunds-button', 'settings-button']);
    for (const b of header) assert.ok(b.left >= 0 && b.right <= 390, `#${b.id} is off the screen: ${b.left}–${b.right}`);
    await sendAndWait(page, 'research the history of WebAssembly runtimes in browsers and servers');
    await assertAccessible(page, 'phone-tool-card');
    // The refund panel with a run waiting for approval.
    await page.click('#refunds-button');
    await page.fill('#refund-amount', '25');
    await page.fill('#refund-reason', 'the strap broke after a week');
    await page.click('#refund-start');
    await page.locator('.refund-run[data-status="suspended"] .approve').waitFor({ timeout: WAIT });
    await assertAccessible(page, 'phone-refunds');
    await page.click('#refunds-close');
    await page.click('#menu');
    await page.locator('.sidebar-open .sidebar').waitFor({ timeout: WAIT });
    assert.equal(await page.getAttribute('#menu', 'aria-expanded'), 'true');
    await page.waitForTimeout(300); // the sidebar slides in (0.2 s)
    await assertAccessible(page, 'phone-sidebar');
    // Esc closes the list (and does not stop anything: nothing streams).
    await page.keyboard.press('Escape');
    assert.equal(await page.getAttribute('#menu', 'aria-expanded'), 'false');
    assert.deepEqual(page.errors, []);
    await context.close();
  });

  it('the refund panel: axe-clean with waiting, finished and refused runs; Tab walks the dialog in order; Esc closes it', T, async () => {
    const page = await openPage(`${url}?model=echo`, await axeContext());
    await page.locator('#refunds-button[data-ready="1"]').waitFor({ timeout: WAIT });
    await page.click('#refunds-button');
    await page.locator('#refunds[open]').waitFor({ timeout: WAIT });
    assert.equal(await page.evaluate(() => document.activeElement.id), 'refund-amount', 'the dialog opens on its first field');
    await assertAccessible(page, 'refunds-empty');
    const request = async (amount, reason, waiting) => {
      await page.fill('#refund-amount', amount);
      await page.fill('#refund-reason', reason);
      await page.click('#refund-start');
      await page.waitForFunction((n) => document.querySelectorAll('.refund-run[data-status="suspended"]').length === n, waiting, { timeout: WAIT });
    };
    await request('19.99', 'changed my mind', 1);
    await request('50', 'arrived broken', 2);
    // Approve the older one (the list is newest first).
    await page.locator('.refund-run').nth(1).locator('.approve').click();
    await page.locator('.refund-run[data-outcome="refunded"]').waitFor({ timeout: WAIT });
    assert.match(await page.textContent('#refund-announcer'), /^Refunded €17\.99 \(reference RF-[0-9A-F]{8}\)\.$/, 'the outcome is announced from the dialog');
    await page.fill('#refund-amount', '-1');
    await page.fill('#refund-reason', 'why not');
    await page.click('#refund-start');
    await page.locator('#refund-error:not([hidden])').waitFor({ timeout: WAIT });
    assert.equal(await page.getAttribute('#refund-error', 'role'), 'alert');
    await assertAccessible(page, 'refunds');
    // The decision buttons are named, and described by the run they decide.
    assert.deepEqual(
      await page.locator('.refund-run[data-status="suspended"] .refund-decision button').evaluateAll((buttons) =>
        buttons.map((b) => `${b.textContent} — ${document.getElementById(b.getAttribute('aria-describedby'))?.textContent}`),
      ),
      ['Approve — €50.00 · arrived broken', 'Decline — €50.00 · arrived broken'],
    );

    await page.focus('#refund-amount');
    const stops = ['#refund-amount'];
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab');
      const stop = await page.evaluate(() => {
        const el = document.activeElement;
        if (!el || el === document.body || !el.closest('dialog')) return null;
        const style = getComputedStyle(el);
        return { name: el.id ? `#${el.id}` : `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}`, ring: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2 };
      });
      if (!stop || stop.name === stops[0]) break; // left the dialog, or came round again
      assert.ok(stop.ring, `${stop.name} has no visible focus ring`);
      stops.push(stop.name);
    }
    assert.deepEqual(stops, ['#refund-amount', '#refund-reason', '#refund-start', 'input.refund-note', 'button.approve', 'button.decline', '#refunds-close']);

    await page.keyboard.press('Escape');
    assert.equal(await page.evaluate(() => document.getElementById('refunds').open), false, 'Esc closes the panel');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'refunds-button', 'focus goes back to the button');
    assert.match(await page.textContent('#refunds-button'), /Refunds\s*1 waiting for approval/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('the Trace view: axe-clean with a failed span, light and dark, and on a phone; it opens on Close, with a focus ring; Esc closes it', T, async () => {
    const page = await openPage(`${url}?model=tool-call`, await axeContext());
    await sendAndWait(page, 'call a tool');
    await page.locator('.trace-reply').click();
    await page.locator('#trace[open] #trace-rows tr.errored').waitFor({ timeout: WAIT });
    await assertAccessible(page, 'trace');
    // It opens on its one control, Close, which shows its focus ring when reached by Tab.
    assert.equal(await page.evaluate(() => document.activeElement.id), 'trace-close');
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Tab');
    const ring = await page.evaluate(() => {
      const style = getComputedStyle(document.activeElement);
      return `${document.activeElement.id} ${style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2}`;
    });
    assert.equal(ring, 'trace-close true');
    await page.keyboard.press('Escape');
    assert.equal(await page.evaluate(() => document.getElementById('trace').open), false, 'Esc closes the view');
    await page.context().close();

    const phone = await openPage(url, await newContext({ bypassCSP: true, viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }));
    await sendAndWait(phone, 'Ask the writer about the sea');
    await phone.locator('.trace-reply').click();
    await phone.locator('#trace[open]').waitFor({ timeout: WAIT });
    await assertAccessible(phone, 'phone-trace');
    // Nothing in the view is pushed past the screen's edge.
    const right = await phone.evaluate(() => Math.max(...[...document.querySelectorAll('#trace *')].map((n) => n.getBoundingClientRect().right)));
    assert.ok(right <= 390, `the Trace view reaches ${right} px`);
    assert.deepEqual([...page.errors, ...phone.errors], []);
    await phone.context().close();
  });

  it('messages are named articles; the list is not a live region; a reply is announced once, when done; aria-busy while it streams', T, async () => {
    const page = await openPage(`${url}?model=slow:20`);
    assert.equal(await page.getAttribute('#messages', 'aria-live'), null, 'the message list is a live region');
    await page.evaluate(() => {
      window.__a11y = { announced: [], busySeen: false, listBusySeen: false };
      const announcer = document.getElementById('announcer');
      new MutationObserver(() => window.__a11y.announced.push(announcer.textContent)).observe(announcer, {
        subtree: true,
        childList: true,
        characterData: true,
      });
      new MutationObserver(() => {
        const reply = document.querySelector('.msg.assistant');
        if (reply && reply.dataset.done !== '1' && reply.querySelector('.text')?.textContent) {
          if (reply.getAttribute('aria-busy') === 'true') window.__a11y.busySeen = true;
          if (document.getElementById('messages').getAttribute('aria-busy') === 'true') window.__a11y.listBusySeen = true;
        }
      }).observe(document.getElementById('messages'), { subtree: true, childList: true, characterData: true });
    });
    const said = 'one two three four five six seven eight nine ten eleven twelve';
    const reply = await sendAndWait(page, said);
    const seen = await page.evaluate(() => window.__a11y);
    assert.ok(seen.busySeen, 'the streaming reply was not aria-busy');
    assert.ok(seen.listBusySeen, 'the message list was not aria-busy while the reply streamed');
    assert.deepEqual(seen.announced, [`Assistant said: You said: ${said}`], 'announced other than once, at the end');
    assert.equal(await reply.getAttribute('aria-busy'), null);
    assert.equal(await page.getAttribute('#messages', 'aria-busy'), null);
    assert.deepEqual(
      await page.locator('#messages article').evaluateAll((items) => items.map((a) => a.getAttribute('aria-label'))),
      ['You said', 'Assistant said'],
    );

    assert.deepEqual(page.errors, []);
    await page.context().close();

    // A failed reply is announced with its error; its error box (Retry, Open settings) passes axe.
    const failing = await openPage(`${url}?model=error-401`, await axeContext());
    await sendAndWait(failing, 'hi');
    assert.match(await failing.textContent('#announcer'), /^The reply failed: .*Incorrect API key/);
    await assertAccessible(failing, 'error');
    assert.deepEqual(failing.errors, []);
    await failing.context().close();
  });

  it('Tab walks the page in order, each stop with a visible focus ring', T, async () => {
    const page = await openPage(url);
    await sendAndWait(page, 'hello'); // a reply with a reasoning block (its summary is a stop)
    await page.locator('.trace-reply').waitFor({ timeout: WAIT }); // its spans have arrived
    // From the top of the page: a click on the sidebar's head (no control there) starts the walk.
    const head = await page.locator('.sidebar-head').boundingBox();
    await page.mouse.click(head.x + 3, head.y + 3);
    const stops = [];
    for (let i = 0; i < 24; i++) {
      await page.keyboard.press('Tab');
      const stop = await page.evaluate(() => {
        const el = document.activeElement;
        const style = getComputedStyle(el);
        const name = el.id ? `#${el.id}` : `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}`;
        const seen = el.dataset.tabSeen === '1';
        el.dataset.tabSeen = '1';
        return { name, seen, ring: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2 };
      });
      if (stop.name === 'body.' || stop.seen) break; // past the end
      stops.push(stop);
      if (i === 3) await page.screenshot({ path: path.join(RESULTS, 'a11y-focus.png') });
    }
    assert.deepEqual(
      stops.map((s) => s.name),
      [
        ...['#new-chat', '#thread-search', 'button.thread', 'button.thread-rename', 'button.thread-delete'],
        ...['#summarise', '#refunds-button', '#settings-button', '#messages'],
        ...['button.msg-action.copy-message', 'button.msg-action.edit-message'], // the user's message
        ...['summary.', 'button.msg-action.copy-message', 'button.msg-action.regenerate', 'button.msg-action.trace-reply'], // the reply
        ...['#attach', '#input', '#send'],
      ],
    );
    for (const stop of stops) assert.ok(stop.ring, `${stop.name} has no visible focus ring`);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
