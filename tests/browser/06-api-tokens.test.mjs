// Settings › API tokens: an admin creates a read-only token (its secret shown once), the
// table lists it with its scope and expiry, the new token reads but may not open this
// panel's data, and a revocation (after a confirmation) ends it.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { BASE, sharedBrowser, shot, signIn, withPage } from './helpers.mjs';

const browser = sharedBrowser();

test('a read token is created, shown once, listed with its scope and revoked after a confirmation', async () => {
  await withPage(browser(), async (page) => {
    await signIn(page);
    await page.goto(`${BASE}/settings/api-tokens`);
    await page.waitForSelector('[data-testid=tokens-table]');
    await page.fill('[data-testid=token-name]', 'dashboard');
    await page.selectOption('[data-testid=token-scope]', 'read');
    await page.selectOption('[data-testid=token-life]', '7');
    await shot(page, '06-api-tokens-1-form');
    await page.click('[data-testid=create-token-submit]');
    await page.waitForSelector('[data-testid=new-token-value]');
    const token = (await page.innerText('[data-testid=new-token-value]')).trim();
    assert.match(token, /^lrt_[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
    const row = page.locator('[data-testid=token-row-dashboard]');
    await row.waitFor();
    assert.equal(await row.getAttribute('data-state'), 'live');
    assert.match(await row.innerText(), /read/);
    assert.doesNotMatch(await page.innerText('[data-testid=tokens-table]'), new RegExp(token.split('.')[1]));
    await shot(page, '06-api-tokens-2-created');

    // The new token reads, and is refused the token list (admin only), by the server.
    const call = (method, tok) =>
      fetch(`${BASE}/levelrail.${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/grpc-web+proto', authorization: `Bearer ${tok}` },
        body: Buffer.from([0, 0, 0, 0, 0]),
      }).then((r) => r.headers.get('grpc-status') ?? 'trailers');
    // An answer with a message carries its status in the trailers, not the headers.
    assert.equal(await call('credentials.v1.CredentialsService/ListProviders', token), 'trailers');
    assert.equal(await call('auth.v1.ApiTokensService/ListApiTokens', token), '7');

    await page.click('[data-testid=revoke-token-dashboard]');
    assert.equal(await row.getAttribute('data-state'), 'live', 'nothing happens before the confirmation');
    await page.click('[data-testid=confirm-revoke-token]');
    await page.waitForSelector('[data-testid=token-row-dashboard][data-state=revoked]');
    assert.match(await page.innerText('[data-testid=tokens-notice]'), /was revoked/);
    assert.equal(await call('credentials.v1.CredentialsService/ListProviders', token), '16');
    await shot(page, '06-api-tokens-3-revoked');
  });
});
