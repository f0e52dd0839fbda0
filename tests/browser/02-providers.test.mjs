// Settings › Cloud node providers: the cards, storing a credential, errors beside the
// field, verification and disconnecting.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { BASE, assertAccessible, sharedBrowser, shot, signIn, withPage } from './helpers.mjs';

const SLUGS = ['hetzner', 'digitalocean', 'aws', 'azure', 'gcp'];
// A syntactically valid AWS key pair that exists nowhere (never verified).
const AWS_KEY_ID = 'AKIAIOSFODNN7EXAMPLE';
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYCANARY0KEY';
// The token the demo Hetzner cloud accepts (sim/src/fakes/hetzner/demo.rs).
const HETZNER_DEMO_TOKEN = 'demo0000000000000000000000000000000000000000000000000000000hcloud';

const browser = sharedBrowser();

async function openSettings(page) {
  await signIn(page, '/settings/node-providers');
  await page.waitForSelector('[data-testid=provider-card-gcp]');
}

test('the settings page shows the five provider cards with their connection state', async (t) => {
  await withPage(browser(), async (page) => {
    await signIn(page);
    // Time to first render: navigation start until the cards are on screen.
    await page.goto(`${BASE}/settings/node-providers`);
    await page.waitForSelector('[data-testid=provider-card-gcp]');
    const ms = await page.evaluate(() => Math.round(performance.now()));
    t.diagnostic(`settings page first render: ${ms} ms after navigation start`);

    const cards = await page.$$eval('[data-testid^=provider-card-]', (els) =>
      els.map((e) => e.dataset.testid.replace('provider-card-', '')),
    );
    assert.deepEqual(cards, SLUGS);
    // The demo stores credentials for its clouds (Hetzner and DigitalOcean at least).
    for (const s of ['hetzner', 'digitalocean']) {
      assert.equal(await page.innerText(`[data-testid=provider-status-${s}]`), 'Connected', s);
    }
    for (const s of SLUGS) {
      const pill = await page.innerText(`[data-testid=provider-status-${s}]`);
      assert.ok(['Connected', 'Not connected'].includes(pill), `${s}: ${pill}`);
      const connected = pill === 'Connected';
      // Verify and Disconnect only make sense with a stored credential.
      assert.equal(await page.isEnabled(`#${s}-verify`), connected, `${s} verify`);
      assert.equal(await page.isEnabled(`#${s}-disconnect`), connected, `${s} disconnect`);
      assert.equal(await page.getAttribute(`[data-testid=provider-card-${s}]`, 'data-connected'), String(connected));
    }
    await shot(page, '02-node-providers');
  });
});

test('every input on the settings page has a label and no secret field is pre-filled', async () => {
  await withPage(browser(), async (page) => {
    await openSettings(page);
    const unlabelled = await page.$$eval('input, select, textarea', (els) =>
      els.filter((e) => e.labels.length === 0 && !e.getAttribute('aria-label')).map((e) => e.id),
    );
    assert.deepEqual(unlabelled, []);
    const filled = await page.$$eval('input[type=password]', (els) =>
      els.filter((e) => e.value !== '' || e.hasAttribute('value')).map((e) => e.id),
    );
    assert.deepEqual(filled, []);
    // One token field per token provider (the original rendered it twice).
    assert.equal(await page.locator('[data-testid=provider-card-hetzner] input[type=password]').count(), 1);
  });
});

test('connecting AWS stores the key, shows Connected, and the secret never comes back', async () => {
  await withPage(browser(), async (page) => {
    const bodies = [];
    page.on('response', (r) => {
      if (r.url().includes('/levelrail.')) bodies.push(r.body().catch(() => Buffer.alloc(0)));
    });
    await openSettings(page);
    // Whether or not the demo stored one, the form replaces the AWS credential.
    assert.equal(await page.isDisabled('#aws-save'), true, 'Save waits for the required fields');
    await page.fill('#aws-access-key-id', AWS_KEY_ID);
    await page.fill('#aws-secret-access-key', AWS_SECRET);
    await page.fill('#aws-region', 'eu-west-1');
    await page.click('#aws-save');

    await page.locator('[data-testid=aws-saved]').waitFor();
    assert.equal(await page.innerText('[data-testid=provider-status-aws]'), 'Connected');
    // Saving verifies at once: this key exists nowhere, so the card says it failed and why,
    // with no press of Verify.
    const verification = page.locator('[data-testid=provider-verification-aws]');
    await page.waitForFunction(
      () => !/Never verified/.test(document.querySelector('[data-testid=provider-verification-aws]')?.textContent ?? 'Never verified'),
    );
    assert.match(await verification.innerText(), /^✗ Failed \d{4}-\d\d-\d\d \d\d:\d\d:\d\d — /);
    const identity = await page.innerText('[data-testid=provider-identity-aws]');
    assert.match(identity, /…MPLE/);
    assert.match(identity, /eu-west-1/);
    for (const id of ['#aws-access-key-id', '#aws-secret-access-key', '#aws-region']) {
      assert.equal(await page.inputValue(id), '', `${id} is cleared after saving`);
    }
    await shot(page, '02-node-providers-aws-connected');

    // Not in the DOM (markup or any input's value) nor in any gRPC-web response.
    assert.ok(!(await page.content()).includes(AWS_SECRET));
    const values = await page.$$eval('input, textarea', (els) => els.map((e) => e.value).join('\n'));
    assert.ok(!values.includes(AWS_SECRET) && !values.includes(AWS_KEY_ID));
    for (const body of await Promise.all(bodies)) {
      assert.ok(!body.includes(AWS_SECRET), 'no gRPC-web response carries the secret');
      assert.ok(!body.includes(AWS_KEY_ID), 'no gRPC-web response carries the full key id');
    }
    assert.ok(bodies.length >= 2, 'the page made gRPC-web calls');

    // A reload shows the stored state and empty fields.
    await page.reload();
    await page.waitForSelector('[data-testid=provider-card-aws][data-connected=true]');
    assert.equal(await page.inputValue('#aws-secret-access-key'), '');

    // Disconnect asks first, then removes the credential.
    await page.click('#aws-disconnect');
    await page.click('#aws-disconnect-keep');
    assert.equal(await page.innerText('[data-testid=provider-status-aws]'), 'Connected');
    await page.click('#aws-disconnect');
    await page.click('#aws-disconnect-confirm');
    await page.waitForSelector('[data-testid=provider-card-aws][data-connected=false]');
    assert.match(await page.innerText('[data-testid=provider-notice-aws]'), /Disconnected/);
  });
});

test('a malformed Hetzner token shows the error beside the token field and keeps the stored one', async () => {
  await withPage(browser(), async (page) => {
    await openSettings(page);
    await page.fill('#hetzner-token', 'too-short');
    await page.click('#hetzner-save');
    const error = page.locator('[data-testid=hetzner-token-error]');
    await error.waitFor();
    assert.match(await error.innerText(), /\S/);
    // Beside the field: inside the same field block, referenced by aria-describedby.
    assert.match(await page.getAttribute('#hetzner-token', 'aria-describedby'), /hetzner-token-error/);
    assert.equal(await page.getAttribute('#hetzner-token', 'aria-invalid'), 'true');
    assert.equal(await page.locator('.field:has(#hetzner-token) [data-testid=hetzner-token-error]').count(), 1);
    assert.equal(await page.innerText('[data-testid=provider-status-hetzner]'), 'Connected');
    await shot(page, '02-node-providers-field-error');

    // Editing the field clears the stale error.
    await page.fill('#hetzner-token', 'x');
    assert.equal(await error.count(), 0);
  });
});

test('an Azure document with a bad field names that field beside the JSON input', async () => {
  await withPage(browser(), async (page) => {
    await openSettings(page);
    const before = await page.innerText('[data-testid=provider-status-azure]');
    const doc = JSON.stringify({
      tenant_id: 'not-a-guid',
      client_id: '00000000-0000-0000-0000-000000000001',
      client_secret: 'CANARY-azure-secret',
      subscription_id: '00000000-0000-0000-0000-000000000002',
      resource_group: 'levelrail',
    });
    await page.fill('#azure-json', doc);
    await page.click('#azure-save');
    const error = page.locator('[data-testid=azure-json-error]');
    await error.waitFor();
    assert.match(await error.innerText(), /^tenant_id: /);
    assert.ok(!(await error.innerText()).includes('CANARY'), 'the error does not echo the secret');
    assert.equal(await page.innerText('[data-testid=provider-status-azure]'), before, 'nothing was stored');
  });
});

test('saving a credential verifies it at once, with the account and the permissions proven', async () => {
  await withPage(browser(), async (page) => {
    await openSettings(page);
    // The demo Hetzner cloud's own token (a demo constant, not a secret): stored again.
    await page.fill('#hetzner-token', HETZNER_DEMO_TOKEN);
    await page.click('#hetzner-save');
    await page.locator('[data-testid=hetzner-saved]').waitFor();
    const verification = page.locator('[data-testid=provider-verification-hetzner]');
    await page.waitForFunction(() =>
      /✓ Verified/.test(document.querySelector('[data-testid=provider-verification-hetzner]')?.textContent ?? ''),
    );
    assert.match(await verification.innerText(), /✓ Verified \d{4}-\d\d-\d\d \d\d:\d\d:\d\d — .*read and create/);
    const permissions = page.locator('[data-testid=provider-permissions-hetzner]');
    assert.equal(await permissions.locator('summary').innerText(), '2 proven, none missing');
    await permissions.locator('summary').click();
    assert.match(await permissions.innerText(), /read[\s\S]*write/);
    await shot(page, '02-node-providers-saved-verified');
  });
});

test('verifying a connected provider records the last verification on its card', async () => {
  await withPage(browser(), async (page) => {
    await openSettings(page);
    await page.click('#digitalocean-verify');
    const notice = page.locator('[data-testid=provider-notice-digitalocean]');
    await notice.waitFor();
    assert.match(await notice.innerText(), /^Verified/);
    assert.match(await page.innerText('[data-testid=provider-verification-digitalocean]'), /✓ Verified/);
    // The scopes it proved, each named behind the disclosure.
    const permissions = page.locator('[data-testid=provider-permissions-digitalocean]');
    assert.match(await permissions.locator('summary').innerText(), /^\d+ proven, none missing$/);
    await permissions.locator('summary').click();
    assert.match(await permissions.innerText(), /droplet:create/);
    await assertAccessible(page, 'provider cards');
    await shot(page, '02-node-providers-verified');
  });
});
