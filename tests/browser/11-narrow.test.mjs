// Every page at 375 px wide (a phone): nothing is cut off or scrolls the page sideways
// (wide tables scroll inside their own box), and axe-core finds no serious or critical
// accessibility violation on any page.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { BASE, assertAccessible, rest, sharedBrowser, shot, signIn, withPage } from './helpers.mjs';

const browser = sharedBrowser();

/** Whether the page is wider than the viewport (a sideways scroll of the whole page). */
async function overflow(page) {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll('body *')]
      .filter((e) => !e.closest('.table-scroll') && e.getBoundingClientRect().right > width + 1)
      .map((e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}.${[...e.classList].join('.')}`);
    return { scroll: document.documentElement.scrollWidth - width, wide: wide.slice(0, 5) };
  });
}

test('every page fits a 375 px screen and passes axe-core', async () => {
  const { provisions } = await rest('GET', '/api/v1/node-provisions?page_size=10');
  const provision = provisions[0];
  const { nodes } = await rest('GET', '/api/v1/nodes?page_size=1');
  assert.ok(provision, 'an earlier test made a provision');

  await withPage(browser(), async (page) => {
    await page.setViewportSize({ width: 375, height: 800 });
    const check = async (name) => {
      const { scroll, wide } = await overflow(page);
      assert.equal(scroll, 0, `${name}: the page scrolls sideways by ${scroll} px (${wide.join(', ')})`);
      await assertAccessible(page, `${name} at 375 px`);
      await shot(page, `11-narrow-${name}`);
    };
    await page.goto(`${BASE}/sign-in`);
    await page.waitForSelector('#api-token');
    await check('sign-in');
    await signIn(page);
    const pages = [
      ['nodes', '/nodes'],
      ['provision', `/provisions/${provision.id}`],
      ['providers', '/settings/node-providers'],
      ['api-tokens', '/settings/api-tokens'],
      ['audit-log', '/settings/audit-log'],
    ];
    if (nodes[0]) pages.push(['node', `/nodes/${nodes[0].id}`]);
    for (const [name, path] of pages) {
      await page.goto(`${BASE}${path}`);
      await page.waitForSelector('main#main h1');
      await page.waitForLoadState('networkidle', { timeout: 3_000 }).catch(() => {});
      await check(name);
    }

    // The wizard's steps, as a dialog on a phone.
    await page.goto(`${BASE}/nodes`);
    await page.click('#add-node');
    await page.click('[data-testid=wizard-provider-hetzner]');
    await page.locator('#wizard-region').selectOption('fsn1');
    await page.click('#wizard-next');
    await page.waitForSelector('input[name=wizard-size]');
    await check('wizard-size');
  });
});
