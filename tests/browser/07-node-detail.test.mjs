// A node's detail page (where it runs, its agent, certificate and last heartbeat) and its
// deletion, whose confirmation says whether the server will be destroyed at the cloud;
// the node list's server-side filters.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { readFileSync } from 'node:fs';

import {
  BASE,
  SERVER_LOG,
  TOKEN,
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

test('a provisioned node shows its cloud, server and certificate, and deleting it destroys the server', async () => {
  const name = uniqueName('detail');
  const p = await provisionAndWait({ provider: 'PROVIDER_HETZNER', region: 'fsn1', size: 'cx22', name });
  assert.equal(p.status, 'PROVISION_STATUS_READY', JSON.stringify(p));
  assert.ok(p.server_id, 'the provision records its server');

  await withPage(browser(), async (page) => {
    await signIn(page);
    // The list filters on the server: Hetzner build nodes leave this general node out.
    await page.selectOption('[data-testid=nodes-filter-provider]', { label: 'Hetzner' });
    await page.waitForSelector(`[data-testid=node-row-${name}]`);
    await page.selectOption('[data-testid=nodes-filter-role]', { label: 'Build' });
    await page.waitForSelector(`[data-testid=node-row-${name}]`, { state: 'detached' });
    await page.selectOption('[data-testid=nodes-filter-role]', { label: 'General (apps)' });
    await page.click(`[data-testid=node-row-${name}] a`);

    await page.waitForURL(new RegExp(`/nodes/${p.node_id}$`));
    await page.waitForSelector('[data-testid=node-facts]');
    assert.equal(await page.innerText('[data-testid=node-name]'), name);
    assert.equal(await page.innerText('[data-testid=node-cloud]'), 'Hetzner · fsn1');
    assert.equal(await page.innerText('[data-testid=node-server-id]'), p.server_id);
    assert.match(await page.innerText('[data-testid=node-cert-expiry]'), /\(in 36[45] d\)$/);
    assert.match(await page.innerText('[data-testid=node-last-seen]'), /just now|s ago|min ago/);
    assert.equal(await page.innerText('[data-testid=node-provision]'), p.id);
    await assertAccessible(page, 'node detail');
    await shot(page, '07-node-detail');

    // The confirmation says what happens at the cloud, and changes with the choice.
    await page.click('[data-testid=delete-node]');
    const consequence = page.locator('[data-testid=delete-node-consequence]');
    assert.match(await consequence.innerText(), new RegExp(`server ${p.server_id} .* destroyed at Hetzner`));
    await page.uncheck('[data-testid=delete-node-destroy]');
    assert.match(await consequence.innerText(), /keeps running at Hetzner, and keeps billing/);
    await page.check('[data-testid=delete-node-destroy]');
    await assertAccessible(page, 'node delete confirmation');
    await shot(page, '07-node-delete-confirm');
    await page.click('[data-testid=confirm-delete-node]');

    await page.waitForURL((u) => u.pathname === '/nodes');
    await page.waitForSelector('[data-testid=nodes-table], [data-testid=nodes-empty]');
    assert.equal(await page.locator(`[data-testid=node-row-${name}]`).count(), 0, 'the node is gone');
  });
  // The record is gone; the server went first (the server logs the destroy only once the
  // cloud deleted it, and keeps the record when it could not).
  const res = await fetch(`${BASE}/api/v1/nodes/${p.node_id}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(res.status, 404);
  const log = readFileSync(SERVER_LOG, 'utf8');
  assert.ok(
    log.split('\n').some((l) => l.includes('server of node destroyed') && l.includes(p.node_id)),
    'the server log records the destroyed server',
  );
});

test('the provisions list follows a provision to ready without a reload', async () => {
  await withPage(browser(), async (page) => {
    await signIn(page);
    await page.waitForSelector('[data-testid=provisions-table], [data-testid=provisions-empty]');
    // Started elsewhere (the API), after the page loaded.
    const name = uniqueName('live');
    await rest('POST', '/api/v1/nodes/provision', {
      provider: 'PROVIDER_HETZNER',
      region: 'fsn1',
      size: 'cx22',
      name,
    });
    await page.click('#refresh-lists');
    const row = page.locator(`[data-testid=provision-row-${name}]`);
    await row.waitFor();
    const seen = new Set();
    const url = page.url();
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const status = await row.getAttribute('data-status');
      seen.add(status);
      if (status === 'ready') break;
      await page.waitForTimeout(200);
    }
    assert.ok(seen.has('ready'), `reached ready in the list: ${[...seen].join(', ')}`);
    assert.ok(seen.size > 1, `a status before ready was shown, then followed: ${[...seen].join(', ')}`);
    assert.equal(page.url(), url, 'no navigation');
  });
});
