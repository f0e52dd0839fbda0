// Shared helpers of the browser tests: Debian's Chromium through playwright-core, a fresh
// browser context per test, console-error collection, keyboard navigation and screenshots.
// The server is started by scripts/browser-test, which passes its address and token.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const BASE = required('LEVELRAIL_URL');
export const TOKEN = required('LEVELRAIL_TOKEN');
const SHOTS = process.env.LEVELRAIL_SCREENSHOTS ?? 'artifacts/screenshots';
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

function required(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests through scripts/browser-test`);
  return v;
}

/** Launches headless Chromium with a fresh profile; `close()` also removes the profile. */
export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), 'levelrail-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * A new page whose console errors and uncaught exceptions are collected. Use it with
 * `withPage`, which asserts at the end that there were none.
 */
async function newPage(browser) {
  const page = await browser.context.newPage();
  const errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  // Every page starts signed out: sessionStorage is per tab.
  return { page, errors };
}

/**
 * Runs `body(page)` on a fresh page, closes it, and fails on any console error except those
 * matching one of `expected` (a test that cuts the network expects failed loads).
 */
export async function withPage(browser, body, { expected = [] } = {}) {
  const { page, errors } = await newPage(browser);
  try {
    await body(page);
  } finally {
    await page.close().catch(() => {});
  }
  const unexpected = errors.filter((e) => !expected.some((re) => re.test(e)));
  assert.deepEqual(unexpected, [], 'the page logged no console errors');
}

/** Signs in through the form and waits for the Nodes page. */
export async function signIn(page, next = '/nodes') {
  await page.goto(`${BASE}${next}`);
  await page.waitForURL(/\/sign-in/);
  await page.fill('#api-token', TOKEN);
  await page.click('#sign-in-submit');
  await page.waitForURL((u) => u.pathname === next);
}

/** Saves a full-page screenshot as `<SHOTS>/<name>.png`. */
export async function shot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** Presses Tab until the element matching `selector` has focus (keyboard-only use). */
export async function tabTo(page, selector, max = 60) {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`Tab never reached ${selector}`);
}

/** The status word of the open progress view (`creating`, …, `ready`, `failed`). */
export async function progressStatus(page) {
  return page.getAttribute('[data-testid=progress-status]', 'data-status');
}

/**
 * Follows the progress view until the status is one of `until`, recording every status
 * seen on the way (polled every 100 ms).
 */
export async function followProgress(page, until, timeoutMs = 90_000) {
  const seen = [];
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const s = await progressStatus(page).catch(() => null);
    if (s && seen.at(-1) !== s) seen.push(s);
    if (s && until.includes(s)) return seen;
    await page.waitForTimeout(100);
  }
  throw new Error(`progress never reached ${until.join('/')}; saw ${seen.join(' → ')}`);
}

/** A node name unique to this run. */
export function uniqueName(prefix) {
  return `${prefix}-${Date.now().toString(36)}${Math.floor(Math.random() * 1296).toString(36)}`;
}

/** Opens the Add node wizard at the size step of `provider`'s first region; returns the region. */
export async function openSizeStep(page, provider) {
  await page.click('#add-node');
  await page.click(`[data-testid=wizard-provider-${provider}]`);
  const select = page.locator('#wizard-region');
  await select.waitFor();
  const region = await select.locator('option:not([value=""])').first().getAttribute('value');
  await select.selectOption(region);
  await page.click('#wizard-next');
  await page.waitForSelector('input[name=wizard-size]');
  return region;
}
