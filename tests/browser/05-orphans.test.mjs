// The orphan inventory on the Nodes page: the demo Hetzner cloud holds two servers with this
// control plane's labels but no provision it knows (`--demo-stray-server`, set by
// scripts/browser-test); the sweeper lists them, Adopt shows the agent's env file once,
// Delete asks first and removes the server at the provider.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { sharedBrowser, shot, signIn, withPage } from './helpers.mjs';

const browser = sharedBrowser();

test('stray servers are listed as orphans, one adopted with its env file and one deleted after a confirmation', async () => {
  await withPage(browser(), async (page) => {
    await signIn(page);
    const one = page.locator('[data-testid=orphan-row-stray-1]');
    const two = page.locator('[data-testid=orphan-row-stray-2]');
    await one.waitFor();
    assert.equal(await one.getAttribute('data-state'), 'pending');
    assert.match(await one.innerText(), /Hetzner/);
    await shot(page, '05-orphans-1-listed');

    await page.click('[data-testid=adopt-orphan-stray-1]');
    await page.waitForSelector('[data-testid=adoption]');
    const env = await page.innerText('[data-testid=adoption-env]');
    assert.match(env, /APP_JOIN_TOKEN=LR1\./);
    assert.match(env, /APP_NODE_NAME=stray-1/);
    assert.match(await page.innerText('[data-testid=adoption-command]'), /levelrail-agent/);
    await page.waitForSelector('[data-testid=orphan-row-stray-1][data-state=adopted]');
    await shot(page, '05-orphans-2-adopted');

    await page.click('[data-testid=delete-orphan-stray-2]');
    assert.equal(await two.getAttribute('data-state'), 'pending', 'nothing happens before the confirmation');
    await page.click('[data-testid=confirm-delete-orphan]');
    await page.waitForSelector('[data-testid=orphans-notice]');
    assert.match(await page.innerText('[data-testid=orphans-notice]'), /The server was deleted/);
    await page.waitForSelector('[data-testid=orphan-row-stray-2][data-state=deleted]');
    await shot(page, '05-orphans-3-deleted');
  });
});
