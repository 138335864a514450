// Opens a relaycheck report.html in headless Chromium, clicks the first failing matrix cell,
// waits for its diff to show, prints the diff's text and the target restarts listed, and saves
// a screenshot.
// Usage: node click-cell.mjs REPORT.html SCREENSHOT.png [SURFACE SHAPE]
// (without SURFACE and SHAPE, the first failing cell)
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';

const [report, screenshot, surface, shape] = process.argv.slice(2);
if (!report || !screenshot) {
  console.error('usage: node click-cell.mjs REPORT.html SCREENSHOT.png');
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const requests = [];
  page.on('request', (r) => { if (!r.url().startsWith('file:')) requests.push(r.url()); });
  await page.goto(pathToFileURL(report).href);
  const cell = surface
    ? page.locator(`td.cell.fail[data-surface="${surface}"][data-shape="${shape}"] button`)
    : page.locator('td.cell.fail button').first();
  await cell.click();
  const diff = page.locator('#detail pre.diff').first();
  await diff.waitFor({ state: 'visible', timeout: 5000 });
  console.log(JSON.stringify({
    title: await page.locator('#detail-title').textContent(),
    diff: await diff.textContent(),
    network: requests,
    // The "Target restarts" list, as rendered (empty when the target never died).
    restarts: await page.locator('#restarts li').allTextContents(),
  }));
  await page.locator('#detail').screenshot({ path: screenshot });
} finally {
  await browser.close();
}
