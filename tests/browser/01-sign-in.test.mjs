// Signing in and out with the API token.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { BASE, TOKEN, sharedBrowser, shot, signIn, tabTo, withPage } from './helpers.mjs';

const browser = sharedBrowser();

test('an unauthenticated visit goes to the sign-in page, which refuses a wrong token', async () => {
  await withPage(browser(), async (page) => {
    await page.goto(`${BASE}/settings/node-providers`);
    await page.waitForURL(/\/sign-in\?next=%2Fsettings%2Fnode-providers/);
    await page.waitForSelector('#api-token');
    await shot(page, '01-sign-in');

    await page.fill('#api-token', 'lrt_0000000000000000.wrong-secret');
    await page.click('#sign-in-submit');
    const error = page.locator('[data-testid=api-token-error]');
    await error.waitFor();
    assert.match(await error.innerText(), /not accepted/);
    assert.equal(await page.getAttribute('#api-token', 'aria-invalid'), 'true');
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  });
});

test('signing in with the keyboard alone opens the page that was asked for', async () => {
  await withPage(browser(), async (page) => {
    await page.goto(`${BASE}/settings/node-providers`);
    await page.waitForSelector('#api-token');
    await tabTo(page, '#api-token');
    await page.keyboard.type(TOKEN);
    await page.keyboard.press('Enter');
    await page.waitForURL((u) => u.pathname === '/settings/node-providers');
    await page.waitForSelector('[data-testid=provider-card-hetzner]');
    // The token stays in this tab only, and nowhere in the page.
    assert.equal(await page.evaluate(() => sessionStorage.getItem('levelrail.api_token')), TOKEN);
    assert.ok(!(await page.content()).includes(TOKEN), 'the token is not in the DOM');
  });
});

test('signing out forgets the token and protects the pages again', async () => {
  await withPage(browser(), async (page) => {
    await signIn(page);
    await page.click('[data-testid=sign-out]');
    await page.waitForURL(/\/sign-in/);
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    await page.goto(`${BASE}/nodes`);
    await page.waitForURL(/\/sign-in\?next=%2Fnodes/);
  });
});
