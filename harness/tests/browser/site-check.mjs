// Opens every page of a relaycheck site in headless Chromium and checks it as a reader would
// meet it: no console error, no page error, no request that failed or left the site, and every
// link and image resolving to a file of the site (and a link's #anchor to an element of it).
// Usage: node site-check.mjs SITE_DIR [SCREENSHOT_DIR [TARGET_PAGE]]
// Prints one JSON line: pages checked, links checked, problems (empty when all is well).
// With SCREENSHOT_DIR, saves index.png, and target.png of TARGET_PAGE (a path in the site,
// default the first target page).
import { chromium } from 'playwright-core';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { readdirSync, existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const [siteDir, shots, targetPage] = process.argv.slice(2);
if (!siteDir) {
  console.error('usage: node site-check.mjs SITE_DIR [SCREENSHOT_DIR]');
  process.exit(2);
}
const root = resolve(siteDir);
function pages(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return pages(path);
    return name.endsWith('.html') ? [path] : [];
  });
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const problems = [];
let links = 0;
const all = pages(root).sort();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  let current = '';
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`${current}: console error: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`${current}: page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`${current}: request failed: ${r.url()}`));
  page.on('request', (r) => { if (!r.url().startsWith('file:')) problems.push(`${current}: request left the site: ${r.url()}`); });
  const ids = new Map();
  async function idsOf(path) {
    if (!ids.has(path)) {
      const other = await browser.newPage();
      await other.goto(pathToFileURL(path).href);
      ids.set(path, new Set(await other.$$eval('[id]', (els) => els.map((e) => e.id))));
      await other.close();
    }
    return ids.get(path);
  }
  for (const path of all) {
    current = path.slice(root.length + 1);
    await page.goto(pathToFileURL(path).href, { waitUntil: 'load' });
    const refs = await page.$$eval('a[href], img[src]', (els) =>
      els.map((e) => (e.tagName === 'A' ? e.href : e.src)));
    for (const ref of refs) {
      links += 1;
      const url = new URL(ref);
      if (url.protocol !== 'file:') { problems.push(`${current}: link leaves the site: ${ref}`); continue; }
      const target = fileURLToPath(url);
      if (!target.startsWith(root) || !existsSync(target)) { problems.push(`${current}: broken link: ${ref}`); continue; }
      if (url.hash && target.endsWith('.html')) {
        const id = decodeURIComponent(url.hash.slice(1));
        if (!(await idsOf(target)).has(id)) problems.push(`${current}: no element #${id} in ${target.slice(root.length + 1)}`);
      }
    }
    const broken = await page.$$eval('img', (imgs) => imgs.filter((i) => !i.complete || i.naturalWidth === 0).map((i) => i.src));
    for (const src of broken) problems.push(`${current}: image did not load: ${src}`);
    if (shots && current === 'index.html') await page.screenshot({ path: join(shots, 'index.png') });
    if (shots && (targetPage ? current === targetPage : current.startsWith('targets/') && !existsSync(join(shots, 'target.png')))) {
      await page.screenshot({ path: join(shots, 'target.png') });
    }
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify({ pages: all.length, links, problems }));
process.exit(problems.length ? 1 : 0);
