// The size step of the Add node wizard shows a monthly price, with its currency and
// basis, on each of the five demo clouds: Hetzner and DigitalOcean publish monthly prices;
// AWS (the Price List), Azure (the Retail Prices API) and GCP (the Cloud Billing Catalog,
// composed: an estimate) publish hourly rates, shown as a month of 730 hours. This file
// runs first: later ones disconnect clouds.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { openSizeStep, sharedBrowser, shot, signIn, withPage } from './helpers.mjs';

const browser = sharedBrowser();

const CLOUDS = {
  hetzner: { currency: 'EUR', basis: /^monthly price$/, estimate: false },
  digitalocean: { currency: 'USD', basis: /^monthly price$/, estimate: false },
  aws: { currency: 'USD', basis: /^730 h × \d+\.\d+ USD\/h$/, estimate: false },
  azure: { currency: 'USD', basis: /^730 h × \d+\.\d+ USD\/h$/, estimate: false },
  gcp: { currency: 'USD', basis: /^730 h × \(\d+(\.\d+)? vCPU × \d+\.\d+ \+ \d+(\.\d+)? GiB × \d+\.\d+ USD\/h\)$/, estimate: true },
};

for (const [provider, want] of Object.entries(CLOUDS)) {
  test(`the wizard shows a monthly price with its basis for ${provider} sizes`, async () => {
    await withPage(browser(), async (page) => {
      await signIn(page);
      const region = await openSizeStep(page, provider);

      const rows = await page.$$eval('label.choice', (labels) =>
        labels.map((l) => ({
          price: l.querySelector('.price')?.textContent ?? '',
          basis: l.querySelector('.price-basis')?.textContent ?? '',
        })),
      );
      const priced = rows.filter((r) => r.price !== 'price unavailable');
      assert.ok(priced.length > 0, `${provider} in ${region}: a priced size among ${JSON.stringify(rows)}`);
      for (const { price, basis } of priced) {
        const amount = want.estimate
          ? new RegExp(`^≈ \\d+\\.\\d\\d ${want.currency}/mo \\(estimate\\)$`)
          : new RegExp(`^\\d+\\.\\d\\d ${want.currency}/mo$`);
        assert.match(price, amount, `${provider}: ${price}`);
        assert.match(basis, want.basis, `${provider}: ${basis}`);
      }
      // A size without a price says why, and can still be chosen unless it cannot boot.
      for (const { basis } of rows.filter((r) => r.price === 'price unavailable')) {
        assert.ok(basis.length > 0, `${provider}: an unavailable price has its reason`);
      }
      await shot(page, `01-wizard-prices-${provider}`);
      await page.keyboard.press('Escape');
      await page.waitForSelector('#add-node-dialog', { state: 'detached' });
    });
  });
}
