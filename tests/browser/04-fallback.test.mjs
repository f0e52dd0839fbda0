// Capacity fallback in the Add node wizard: the demo's DigitalOcean region sfo3 has no
// capacity (`levelrail serve --demo --demo-full-regions sfo3`, set by scripts/browser-test);
// an operator who ticks "If sfo3 has no capacity, try ams3" gets a node in ams3, and the
// progress view says which choice was passed over and why.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { followProgress, sharedBrowser, shot, signIn, uniqueName, withPage } from './helpers.mjs';

const browser = sharedBrowser();

test('a region without capacity falls back to the alternative ticked in the wizard', async () => {
  await withPage(browser(), async (page) => {
    const name = uniqueName('fb');
    await signIn(page);
    await page.click('#add-node');
    await page.click('[data-testid=wizard-provider-digitalocean]');
    await page.locator('#wizard-region').selectOption('sfo3');

    // Alternatives: every other region, ticked in order; the first choice is not offered.
    await page.waitForSelector('[data-testid=wizard-alt-regions]');
    assert.equal(await page.locator('#wizard-alt-region-sfo3').count(), 0);
    assert.match(await page.innerText('[data-testid=wizard-alt-regions] legend'), /If sfo3 has no capacity, try/);
    await page.check('#wizard-alt-region-ams3');
    await page.check('#wizard-alt-region-fra1');
    assert.equal(
      await page.innerText('[data-testid=wizard-alt-regions-order]'),
      'Tried next, in this order: ams3, then fra1.',
    );
    await page.uncheck('#wizard-alt-region-fra1');
    await shot(page, '04-fallback-1-regions');
    await page.click('#wizard-next');

    const size = page.locator('input[name=wizard-size]:not([disabled])').first();
    await size.check();
    const sizeId = await size.getAttribute('value');
    await page.click('#wizard-next');
    await page.fill('#wizard-name', name);
    await page.click('#wizard-next');
    const summary = await page.innerText('[data-testid=wizard-summary]');
    assert.match(summary, /If unavailable, try\s+Regions: ams3/);
    await page.click('#wizard-next'); // Create node

    await page.waitForSelector('[data-testid=provision-progress]');
    const seen = await followProgress(page, ['ready', 'failed']);
    assert.equal(seen.at(-1), 'ready', `reached ready (saw ${seen.join(' → ')})`);
    await page.waitForSelector('[data-testid=progress-choices]');
    const rejected = page.locator(`[data-testid=choice-sfo3-${sizeId}]`);
    assert.equal(await rejected.getAttribute('data-outcome'), 'rejected');
    assert.match(await rejected.innerText(), /capacity unavailable in sfo3/);
    assert.equal(
      await page.getAttribute(`[data-testid=choice-ams3-${sizeId}]`, 'data-outcome'),
      'in_use',
    );
    await shot(page, '04-fallback-2-ready');
  });
});
