// The Nodes page and the Add node wizard against the demo clouds: live progress to ready,
// reopening progress from the list, cancelling, and the node list.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  followProgress,
  openSizeStep,
  progressStatus,
  sharedBrowser,
  shot,
  signIn,
  tabTo,
  uniqueName,
  withPage,
} from './helpers.mjs';

const STAGES = ['creating', 'booting', 'installing', 'enrolling', 'ready'];

const browser = sharedBrowser();

/** Clicks through the wizard up to the progress view (mouse; the keyboard test is below). */
async function startProvision(page, { provider, name }) {
  await openSizeStep(page, provider);
  await page.locator('input[name=wizard-size]').first().check();
  await page.click('#wizard-next');
  await page.fill('#wizard-name', name);
  await page.click('#wizard-next');
  await page.click('#wizard-next'); // Create node
  await page.waitForSelector('[data-testid=provision-progress]');
}

test('the wizard offers only connected providers and links to settings for the others', async () => {
  await withPage(browser(), async (page) => {
    // Make sure one provider is not connected (the demo may connect all five).
    await signIn(page, '/settings/node-providers');
    await page.waitForSelector('[data-testid=provider-card-gcp]');
    if ((await page.getAttribute('[data-testid=provider-card-gcp]', 'data-connected')) === 'true') {
      await page.click('#gcp-disconnect');
      await page.click('#gcp-disconnect-confirm');
      await page.waitForSelector('[data-testid=provider-card-gcp][data-connected=false]');
    }
    const connected = {};
    for (const p of ['hetzner', 'digitalocean', 'aws', 'azure', 'gcp']) {
      connected[p] = (await page.getAttribute(`[data-testid=provider-card-${p}]`, 'data-connected')) === 'true';
    }

    // The "Connect one" link of a disconnected provider leads to its settings.
    await page.click('nav >> text=Nodes');
    await page.waitForURL((u) => u.pathname === '/nodes');
    await page.waitForSelector('[data-testid=nodes-empty], [data-testid=nodes-table]');
    await shot(page, '03-nodes');
    await page.click('#add-node');
    await page.waitForSelector('[data-testid=wizard-provider-gcp]');
    await shot(page, '03-wizard-1-provider');
    for (const [p, on] of Object.entries(connected)) {
      assert.equal(await page.isEnabled(`[data-testid=wizard-provider-${p}]`), on, p);
      assert.equal(await page.locator(`[data-testid=wizard-connect-${p}]`).count(), on ? 0 : 1, p);
    }
    assert.equal(await page.getAttribute('[data-testid=wizard-connect-gcp]', 'href'), '/settings/node-providers');
    // Escape closes the dialog.
    await page.keyboard.press('Escape');
    await page.waitForSelector('#add-node-dialog', { state: 'detached' });
  });
});

test('the wizard checks the node name as it is typed', async () => {
  await withPage(browser(), async (page) => {
    await signIn(page);
    await page.click('#add-node');
    await page.click('[data-testid=wizard-provider-hetzner]');
    await page.locator('#wizard-region').selectOption({ index: 1 });
    await page.click('#wizard-next');
    await page.locator('input[name=wizard-size]').first().check();
    await page.click('#wizard-next');
    // A name is suggested from provider and region.
    assert.match(await page.inputValue('#wizard-name'), /^hetzner-[a-z0-9-]+$/);
    const cases = [
      ['1web', /lowercase letter/],
      ['Web', /lowercase letter/],
      ['web_1', /letters, digits and hyphens/],
      ['web-', /hyphen/],
      ['a'.repeat(64), /63/],
    ];
    for (const [name, message] of cases) {
      await page.fill('#wizard-name', name);
      assert.match(await page.innerText('[data-testid=wizard-name-error]'), message, name);
      assert.equal(await page.isDisabled('#wizard-next'), true, name);
    }
    await shot(page, '03-wizard-4-details-invalid-name');
    await page.fill('#wizard-name', 'web-1');
    assert.equal(await page.locator('[data-testid=wizard-name-error]').count(), 0);
    assert.equal(await page.isEnabled('#wizard-next'), true);
    // SSH access is opt-in; turning it on asks for a key before continuing.
    assert.equal(await page.locator('#wizard-ssh-key').count(), 0);
    await page.check('#wizard-ssh');
    assert.equal(await page.isDisabled('#wizard-next'), true);
    await page.fill('#wizard-ssh-key', 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC0000000000000000000000000000000000000000000 me@laptop');
    await page.fill('#wizard-ssh-cidr', '203.0.113.7/32');
    assert.equal(await page.isEnabled('#wizard-next'), true);
    const unlabelled = await page.$$eval('dialog input, dialog select, dialog textarea', (els) =>
      els.filter((e) => e.labels.length === 0).map((e) => e.id),
    );
    assert.deepEqual(unlabelled, []);
  });
});

test('the wizard runs a Hetzner node to ready with the keyboard alone, showing every stage live', async (t) => {
  await withPage(browser(), async (page) => {
    const name = uniqueName('kb');
    await signIn(page);
    await tabTo(page, '#add-node');
    await page.keyboard.press('Enter');
    await page.waitForSelector('[data-testid=wizard-provider-hetzner]');
    await tabTo(page, '[data-testid=wizard-provider-hetzner]');
    await page.keyboard.press('Enter');

    await page.waitForSelector('#wizard-region option:nth-child(2)', { state: 'attached' });
    await shot(page, '03-wizard-2-region');
    await tabTo(page, '#wizard-region');
    await page.keyboard.press('ArrowDown');
    assert.notEqual(await page.inputValue('#wizard-region'), '', 'a region is chosen');
    await tabTo(page, '#wizard-next');
    await page.keyboard.press('Enter');

    await page.waitForSelector('input[name=wizard-size]');
    const prices = await page.$$eval('[data-testid^=wizard-price-]', (els) => els.map((e) => e.textContent));
    assert.ok(prices.some((p) => /\d+\.\d\d (EUR|USD)\/mo|\$\d/.test(p)), `a live price is shown: ${prices}`);
    await tabTo(page, 'input[name=wizard-size]');
    await page.keyboard.press('Space');
    await shot(page, '03-wizard-3-size');
    await tabTo(page, '#wizard-next');
    await page.keyboard.press('Enter');

    await page.waitForSelector('#wizard-name');
    await tabTo(page, '#wizard-name');
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type(name);
    await tabTo(page, '#wizard-role');
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.inputValue('#wizard-role'), 'build');
    await shot(page, '03-wizard-4-details');
    await tabTo(page, '#wizard-next');
    await page.keyboard.press('Enter');

    await page.waitForSelector('[data-testid=wizard-summary]');
    const summary = await page.innerText('[data-testid=wizard-summary]');
    assert.match(summary, new RegExp(name));
    assert.match(summary, /Build/);
    assert.match(summary, /Server default/);
    await shot(page, '03-wizard-5-confirm');
    await tabTo(page, '#wizard-next');
    await page.keyboard.press('Enter');

    await page.waitForSelector('[data-testid=provision-progress]');
    await page.waitForSelector('[data-testid=progress-status]');
    await shot(page, '03-wizard-6-progress');
    const seen = await followProgress(page, ['ready', 'failed']);
    t.diagnostic(`statuses seen live: ${seen.join(' → ')}`);
    assert.equal(seen.at(-1), 'ready', `reached ready (saw ${seen.join(' → ')})`);
    assert.ok(seen.length >= 3, 'intermediate states arrived over the stream');
    const order = seen.map((s) => STAGES.indexOf(s));
    assert.deepEqual(order, [...order].sort((a, b) => a - b), 'states arrived in order');

    for (const s of STAGES) {
      assert.equal(await page.getAttribute(`[data-testid=stage-${s}]`, 'data-state'), 'done', s);
    }
    for (const s of STAGES.slice(0, 4)) {
      assert.match(await page.innerText(`[data-testid=stage-${s}-time]`), /\d+ (s|min)/, `${s} shows its time`);
    }
    const steps = await page.$$eval('[data-testid=install-steps] li', (els) => els.map((e) => e.dataset.done));
    assert.deepEqual(steps, ['true', 'true', 'true'], 'every install sub-step was reported');
    assert.match(await page.innerText('[data-testid=progress-ready]'), new RegExp(name));
    assert.equal(await page.locator('#progress-cancel').count(), 0, 'no Cancel once ready');
    await shot(page, '03-wizard-7-ready');

    await tabTo(page, '#wizard-done');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#add-node-dialog', { state: 'detached' });
    const row = page.locator(`[data-testid=node-row-${name}]`);
    await row.waitFor();
    const text = await row.innerText();
    assert.match(text, /Online/);
    assert.match(text, /build/);
    assert.match(text, /just now|\d+ s ago/);
    assert.equal(await page.getAttribute(`[data-testid=provision-row-${name}]`, 'data-status'), 'ready');
    await shot(page, '03-nodes-with-node');
  });
});

test('closing the wizard keeps provisioning, and the progress reopens from the list', async () => {
  await withPage(browser(), async (page) => {
    const name = uniqueName('reopen');
    await signIn(page);
    await startProvision(page, { provider: 'digitalocean', name });
    await page.waitForSelector('[data-testid=progress-status]');
    assert.notEqual(await progressStatus(page), 'ready', 'still provisioning when closed');
    assert.match(await page.innerText('#wizard-done'), /keeps provisioning/);
    await page.click('#wizard-done');
    await page.waitForSelector('#add-node-dialog', { state: 'detached' });

    const row = page.locator(`[data-testid=provision-row-${name}]`);
    await row.waitFor();
    assert.notEqual(await row.getAttribute('data-status'), 'failed');
    await page.click(`[data-testid=open-progress-${name}]`);
    await page.waitForSelector('[data-testid=progress-status]');
    // The reopened stream starts from the current state, not from the beginning.
    const first = await progressStatus(page);
    assert.ok(first && first !== 'failed', `reopened at ${first}`);
    await shot(page, '03-progress-reopened');
    const seen = await followProgress(page, ['ready', 'failed']);
    assert.equal(seen.at(-1), 'ready');
    await page.click('#wizard-done');
    await page.waitForSelector(`[data-testid=provision-row-${name}][data-status=ready]`);
    await page.waitForSelector(`[data-testid=node-row-${name}]`);
  });
});

test('cancelling a provision ends it failed with the operator as the reason', async () => {
  await withPage(browser(), async (page) => {
    const name = uniqueName('cancel');
    await signIn(page);
    await startProvision(page, { provider: 'digitalocean', name });
    await page.click('#progress-cancel');
    await page.click('#progress-cancel-keep');
    assert.notEqual(await progressStatus(page), 'failed', 'Keep provisioning does not cancel');
    await page.click('#progress-cancel');
    await page.click('#progress-cancel-confirm');
    const seen = await followProgress(page, ['failed', 'ready'], 60_000);
    assert.equal(seen.at(-1), 'failed');
    assert.match(await page.innerText('[data-testid=progress-failure-reason]'), /cancel/i);
    assert.equal(await page.locator('[data-testid=progress-stepper] [data-state=failed]').count(), 1);
    await shot(page, '03-progress-cancelled');
    await page.click('#wizard-done');
    await page.waitForSelector(`[data-testid=provision-row-${name}][data-status=failed]`);
    assert.equal(await page.locator(`[data-testid=node-row-${name}]`).count(), 0);
  });
});

test('a progress stream that cannot connect retries and catches up with the current state', async () => {
  const watch = '**/levelrail.provisioner.v1.ProvisionerService/WatchProvision';
  await withPage(
    browser(),
    async (page) => {
      const name = uniqueName('retry');
      await signIn(page);
      // Every WatchProvision fails at the network level until the route is removed.
      let refused = 0;
      await page.route(watch, (route) => {
        refused += 1;
        return route.abort('connectionreset');
      });
      await startProvision(page, { provider: 'digitalocean', name });
      await page.waitForSelector('[data-testid=progress-link][data-link=reconnecting]');
      await shot(page, '03-progress-reconnecting');
      await page.waitForTimeout(1_500);
      await page.unroute(watch);
      const seen = await followProgress(page, ['ready', 'failed']);
      assert.ok(refused >= 2, `the stream was retried (${refused} refused attempts)`);
      assert.equal(seen.at(-1), 'ready', `caught up (saw ${seen.join(' → ')})`);
      assert.equal(await page.locator('[data-testid=progress-link][data-link=broken]').count(), 0);
    },
    { expected: [/Failed to load resource|ERR_CONNECTION_RESET/] },
  );
});
