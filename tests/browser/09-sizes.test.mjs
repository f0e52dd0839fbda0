// The size picker: a size the control plane cannot boot (an Arm size while only the x86_64
// agent is served, as scripts/browser-test runs it) is shown disabled with the reason;
// sizes sort by price, vCPUs or memory and filter by a minimum of each; "Compare across
// connected clouds" shows each connected cloud's cheapest size meeting the minimum.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  assertAccessible,
  openSizeStep,
  sharedBrowser,
  shot,
  signIn,
  withPage,
} from './helpers.mjs';

const browser = sharedBrowser();

/** The sizes listed, in order: id, vCPUs, memory (MB), monthly price, disabled. */
async function listed(page) {
  return page.$$eval('label.choice.radio', (labels) =>
    labels.map((l) => {
      const input = l.querySelector('input');
      const specs = l.querySelector('.specs')?.textContent ?? '';
      const price = l.querySelector('.price')?.textContent ?? '';
      return {
        id: input.value,
        vcpus: Number(/(\d+) vCPU/.exec(specs)?.[1] ?? 0),
        memoryGb: Number(/([\d.]+) GB RAM/.exec(specs)?.[1] ?? 0),
        price: Number(/([\d.]+) \w+\/mo/.exec(price)?.[1] ?? NaN),
        disabled: input.disabled,
      };
    }),
  );
}

test('an Arm size without an Arm agent is disabled with its reason, after the sizes that can boot', async () => {
  await withPage(browser(), async (page) => {
    await signIn(page);
    await openSizeStep(page, 'hetzner');
    const arm = page.locator('#wizard-size-cax11');
    assert.equal(await arm.isDisabled(), true, 'cax11 (arm64) cannot be chosen');
    assert.match(
      await page.innerText('[data-testid=wizard-unavailable-cax11]'),
      /^Unavailable: .*(aarch64|arm64|Arm)/i,
    );
    const sizes = await listed(page);
    const firstDisabled = sizes.findIndex((s) => s.disabled);
    assert.ok(firstDisabled > 0, 'bootable sizes come first');
    assert.ok(sizes.slice(firstDisabled).every((s) => s.disabled), 'then the ones that cannot boot');
    await assertAccessible(page, 'size step');
    await shot(page, '09-sizes-arm-disabled');
  });
});

test('sizes sort by price, vCPUs or memory, and filter by a minimum of each', async () => {
  await withPage(browser(), async (page) => {
    await signIn(page);
    await openSizeStep(page, 'hetzner');
    const bootable = (list) => list.filter((s) => !s.disabled);
    const ascending = (xs) => xs.every((x, i) => i === 0 || xs[i - 1] <= x);

    // Price is the default order.
    const byPrice = bootable(await listed(page));
    assert.ok(byPrice.length >= 3, JSON.stringify(byPrice));
    const prices = byPrice.map((s) => s.price).filter((p) => !Number.isNaN(p));
    assert.ok(ascending(prices), `cheapest first: ${prices}`);

    // Each order is the same sizes sorted independently here (ties as the picker breaks
    // them: vCPUs, memory, id), and the list on screen changes to it.
    const ids = (list) => list.map((s) => s.id);
    const sorted = (key) =>
      ids(
        [...byPrice].sort(
          (a, b) => key(a) - key(b) || a.vcpus - b.vcpus || a.memoryGb - b.memoryGb || (a.id < b.id ? -1 : 1),
        ),
      );
    for (const [order, key] of [['memory', (s) => s.memoryGb], ['vcpus', (s) => s.vcpus]]) {
      await page.selectOption('[data-testid=wizard-size-order]', order);
      await page.waitForFunction(
        (want) => [...document.querySelectorAll('label.choice.radio input:not([disabled])')].map((i) => i.value).join() === want,
        sorted(key).join(),
      );
    }

    await page.selectOption('[data-testid=wizard-min-vcpus]', '4');
    await page.selectOption('[data-testid=wizard-min-memory]', '8');
    const filtered = await listed(page);
    assert.ok(filtered.length > 0 && bootable(filtered).length < byPrice.length, JSON.stringify(filtered));
    for (const s of filtered) {
      assert.ok(s.vcpus >= 4 && s.memoryGb >= 7.5, `${s.id}: ${s.vcpus} vCPU, ${s.memoryGb} GB`);
    }
    await shot(page, '09-sizes-filtered');
    await page.selectOption('[data-testid=wizard-min-vcpus]', '64');
    await page.waitForSelector('[data-testid=wizard-sizes-filtered]');
  });
});

test('compare across connected clouds shows each cloud\'s cheapest size for the minimum, with its price', async () => {
  await withPage(browser(), async (page) => {
    await signIn(page);
    await openSizeStep(page, 'hetzner');
    await page.selectOption('[data-testid=wizard-min-vcpus]', '2');
    await page.selectOption('[data-testid=wizard-min-memory]', '4');
    await page.click('[data-testid=compare-clouds] summary');
    await page.waitForSelector('[data-testid=compare-table]', { timeout: 60_000 });

    const rows = await page.$$eval('[data-testid=compare-table] tbody tr', (trs) =>
      trs.map((tr) => ({
        cloud: tr.dataset.testid.replace('compare-', ''),
        size: tr.cells[1].nextElementSibling.textContent,
        price: tr.cells[3].textContent,
      })),
    );
    const clouds = rows.map((r) => r.cloud);
    assert.ok(clouds.includes('hetzner') && clouds.includes('digitalocean'), clouds.join(', '));
    for (const r of rows) {
      const vcpus = Number(/(\d+) vCPU/.exec(r.size)?.[1] ?? 0);
      const gb = Number(/([\d.]+) GB RAM/.exec(r.size)?.[1] ?? 0);
      assert.ok(vcpus >= 2 && gb >= 3.8, `${r.cloud}: ${r.size}`);
      assert.match(r.price, /\d+\.\d\d (EUR|USD)\/mo/, `${r.cloud} publishes a price: ${r.price}`);
    }
    // Hetzner's cheapest 2 vCPU / 4 GB size that can boot is not the Arm one.
    assert.doesNotMatch(rows.find((r) => r.cloud === 'hetzner').size, /cax/);
    await assertAccessible(page, 'size comparison');
    await shot(page, '09-sizes-compare');
  });
});
