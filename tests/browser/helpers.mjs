// Shared helpers of the browser tests: Debian's Chromium through playwright-core, a fresh
// browser context per test, console-error collection, keyboard navigation and screenshots.
// The server is started by scripts/browser-test, which passes its address and token.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before } from 'node:test';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const BASE = required('LEVELRAIL_URL');
export const TOKEN = required('LEVELRAIL_TOKEN');
/** A second server whose demo enrolled a fleet of 10,000 nodes (07-fleet). */
export const FLEET_URL = process.env.LEVELRAIL_FLEET_URL;
export const FLEET_TOKEN = process.env.LEVELRAIL_FLEET_TOKEN;
/** The main server's log (the tests read what it records). */
export const SERVER_LOG = required('LEVELRAIL_SERVER_LOG');
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const SHOTS = process.env.LEVELRAIL_SCREENSHOTS ?? 'artifacts/screenshots';
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

function required(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests through scripts/browser-test`);
  return v;
}

/**
 * One browser for the test file: launched before its first test, closed after its last.
 * Returns a function that gives it.
 */
export function sharedBrowser() {
  let browser;
  before(async () => {
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
  });
  return () => browser;
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
export async function signIn(page, next = '/nodes', { base = BASE, token = TOKEN } = {}) {
  await page.goto(`${base}${next}`);
  await page.waitForURL(/\/sign-in/);
  await page.fill('#api-token', token);
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

/**
 * Runs axe-core on the page as it stands and fails on any serious or critical violation,
 * naming each rule and the elements it found.
 */
export async function assertAccessible(page, what) {
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) {
    // Evaluated by the browser's debugging protocol, which the page's strict CSP (no
    // inline script) does not govern; the page itself never runs it.
    await page.evaluate(readFileSync(AXE, 'utf8'));
  }
  const violations = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
  assert.deepEqual(violations, [], `${what}: no serious or critical accessibility violation`);
}

/** Calls the REST API of the main server as the admin; returns the parsed JSON answer. */
export async function rest(method, path, body) {
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : {};
}

/** Starts a provision over REST and waits until it is `ready` or `failed`; returns it. */
export async function provisionAndWait(request, timeoutMs = 120_000) {
  const { provision } = await rest('POST', '/api/v1/nodes/provision', request);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { provision: p } = await rest('GET', `/api/v1/node-provisions/${provision.id}`);
    if (['PROVISION_STATUS_READY', 'PROVISION_STATUS_FAILED'].includes(p.status)) return p;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`provision ${provision.id} did not finish`);
}
