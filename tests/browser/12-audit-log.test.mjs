// Settings › Audit log: the state-changing calls the earlier tests made, newest first, with
// their outcome, token and peer; a read is recorded only when it was refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { assertAccessible, sharedBrowser, shot, signIn, withPage } from './helpers.mjs';

const browser = sharedBrowser();

test('the audit log lists the calls that changed something, newest first', async () => {
  await withPage(browser(), async (page) => {
    await signIn(page, '/settings/audit-log');
    await page.waitForSelector('[data-testid=audit-table]');
    const rows = await page.$$eval('[data-testid=audit-row]', (trs) =>
      trs.map((tr) => ({
        at: tr.cells[0].innerText,
        call: tr.cells[1].innerText,
        outcome: tr.cells[3].innerText,
        token: tr.cells[4].innerText,
      })),
    );
    assert.ok(rows.length > 0 && rows.length <= 50, `${rows.length} rows`);
    const times = rows.map((r) => r.at);
    assert.deepEqual(times, [...times].sort().reverse(), 'newest first');
    for (const r of rows) {
      assert.match(r.call, /^\w+Service\/\w+$/, JSON.stringify(r));
      // A read is recorded only when it was refused (a token outside its scope).
      if (/^(List|Get|Watch)/.test(r.call.split('/')[1])) {
        assert.notEqual(r.outcome, 'OK', `a read that succeeded is not recorded: ${r.call}`);
      }
      assert.match(r.token, /^lrt_/);
    }
    // The failed provision's retry (08) and the node delete (07) are there.
    let calls = rows.map((r) => r.call);
    while (!calls.includes('ProvisionerService/RetryProvision') && (await page.isEnabled('[data-testid=audit-older]'))) {
      const first = await page.innerText('[data-testid=audit-row] td');
      await page.click('[data-testid=audit-older]');
      // The older page is on screen once its first row differs.
      await page.waitForFunction(
        (before) => document.querySelector('[data-testid=audit-row] td')?.innerText !== before,
        first,
      );
      calls = await page.$$eval('[data-testid=audit-row] th', (ths) => ths.map((t) => t.innerText));
    }
    assert.ok(calls.includes('ProvisionerService/RetryProvision'), calls.join(', '));
    await assertAccessible(page, 'audit log');
    await shot(page, '12-audit-log');
  });
});
