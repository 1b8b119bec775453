// The demo's agent in a SharedWorker (SPEC §21.1; Settings: "Run the agent in a SharedWorker",
// on by default where the browser has SharedWorker): `node --test www/worker-mode.test.mjs`.
// Playwright does not see a SharedWorker's requests, so "where the agent ran" is read from the
// requests the page itself made to the model server.

import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IN_PAGE, T, childEnv, openPage, reload, sendAndWait, serve, shownMessages, useBrowser, waitForMessages } from './page-harness.mjs';

useBrowser();

/** Counts the page's own requests to the model server (`/v1/…`). */
function modelCallsOf(page) {
  const calls = [];
  page.on('request', (req) => {
    if (/\/v1\//.test(new URL(req.url()).pathname)) calls.push(req.url());
  });
  return calls;
}

describe('chat page: the agent in a SharedWorker', () => {
  let url;
  before(async () => {
    ({ url } = await serve(childEnv()));
  });

  it('on by default: the reply streams from the worker (the page calls no model), is stored, and survives a reload', { ...T, skip: IN_PAGE && 'WASM_AGENT_DEMO_WORKER=0' }, async () => {
    const page = await openPage(`${url}?model=echo`);
    const calls = modelCallsOf(page);
    const reply = await sendAndWait(page, 'hello from a tab');
    assert.equal(await reply.locator('.text').textContent(), 'You said: hello from a tab');
    assert.deepEqual(calls, [], 'the page itself called the model');
    await page.click('#settings-button');
    assert.equal(await page.isChecked('#set-worker'), true);
    await page.click('#set-cancel');
    await reload(page);
    await waitForMessages(page, 2);
    assert.deepEqual((await shownMessages(page)).map((m) => m.text), ['hello from a tab', 'You said: hello from a tab']);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it('turned off in Settings (or ?worker=0): the agent runs in the page', T, async () => {
    const page = await openPage(`${url}?model=echo`);
    const calls = modelCallsOf(page);
    await page.click('#settings-button');
    await page.uncheck('#set-worker');
    await page.click('#set-save');
    const reply = await sendAndWait(page, 'now in the page');
    assert.equal(await reply.locator('.text').textContent(), 'You said: now in the page');
    assert.equal(calls.length, 1, 'one model request from the page');
    await reload(page);
    await page.click('#settings-button');
    assert.equal(await page.isChecked('#set-worker'), false, 'the setting is kept');
    await page.click('#set-cancel');
    assert.deepEqual(page.errors, []);
    await page.context().close();

    const forced = await openPage(`${url}?model=echo&worker=0`);
    const forcedCalls = modelCallsOf(forced);
    await sendAndWait(forced, 'forced');
    assert.equal(forcedCalls.length, 1);
    await forced.context().close();
  });
});
