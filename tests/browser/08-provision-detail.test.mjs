// A provision's detail page: a provision whose server create failed (the demo's
// DigitalOcean region sfo3 has no capacity) shows every event with its time, the failure
// with its phase and the provider's code, what cleanup did, and "Retry with the same
// settings", which starts a new provision of the same name, cloud, region and size.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  assertAccessible,
  provisionAndWait,
  rest,
  sharedBrowser,
  shot,
  signIn,
  uniqueName,
  withPage,
} from './helpers.mjs';

const browser = sharedBrowser();

test('a provision whose create failed shows its timeline and cleanup, and retries with the same settings', async () => {
  const { sizes } = await rest('GET', '/api/v1/providers/digitalocean/sizes?region=sfo3');
  const size = sizes.find((s) => !s.unavailable_reason).id;
  const name = uniqueName('fail');
  const p = await provisionAndWait({ provider: 'PROVIDER_DIGITALOCEAN', region: 'sfo3', size, name });
  assert.equal(p.status, 'PROVISION_STATUS_FAILED', JSON.stringify(p));

  await withPage(browser(), async (page) => {
    await signIn(page);
    // From the list: the name links to the detail page.
    await page.click(`[data-testid=provision-link-${name}]`);
    await page.waitForURL(new RegExp(`/provisions/${p.id}$`));
    await page.waitForSelector('[data-testid=provision-timeline]');
    assert.equal(await page.innerText('[data-testid=provision-name]'), name);

    const entries = await page.$$eval('[data-testid=timeline-entry]', (els) =>
      els.map((e) => ({ text: e.innerText, failed: e.classList.contains('failed') })),
    );
    const texts = entries.map((e) => e.text);
    // Every event has its time (local, to the second).
    for (const t of texts) assert.match(t, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d /, t);
    assert.ok(texts.some((t) => /Join token minted/.test(t)), texts.join('\n'));
    assert.ok(texts.some((t) => /Cloud-init user-data rendered/.test(t)), texts.join('\n'));
    const last = entries.at(-1);
    assert.ok(last.failed, 'the failure is the last event');
    assert.match(last.text, /Failed while creating server — .*capacity.*\(provider code /i);

    // Cleanup: the create never made a server; the join token was revoked.
    assert.match(await page.innerText('[data-testid=cleanup-server]'), /Nothing left at DigitalOcean/);
    assert.equal(await page.innerText('[data-testid=cleanup-token]'), 'Revoked');
    await assertAccessible(page, 'failed provision detail');
    await shot(page, '08-provision-failed');

    await page.click('[data-testid=retry-provision]');
    await page.waitForURL((u) => u.pathname.startsWith('/provisions/') && !u.pathname.endsWith(p.id));
    const retryId = new URL(page.url()).pathname.split('/').at(-1);
    await page.waitForSelector('[data-testid=provision-progress]');
    const { provision: retried } = await rest('GET', `/api/v1/node-provisions/${retryId}`);
    assert.equal(retried.name, name);
    assert.equal(retried.provider, 'PROVIDER_DIGITALOCEAN');
    assert.equal(retried.region, 'sfo3');
    assert.equal(retried.size, size);
    // sfo3 is still full: the retry fails the same way, and says so live.
    await page.waitForSelector('[data-testid=progress-failure]', { timeout: 60_000 });
    await shot(page, '08-provision-retried');
  });
});
