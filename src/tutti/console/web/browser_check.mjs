// Opens a Tutti console or report in Debian's headless chromium (through
// the DevTools protocol, with puppeteer-core) and checks what a person would
// see. Exits 0 when every check passes, 1 naming the first that failed.
//
//   node browser_check.mjs console URL --models a,b [--token T] [--screenshot FILE]
//       the live console at URL (http or https; self-signed certificates are
//       accepted) under load: it refuses without credentials when --token is
//       given, then, with them, shows every model, non-zero live rates after
//       two samples, and charts with drawn pixels.
//   node browser_check.mjs report FILE --kind simulation|load [--screenshot FILE]
//       an HTML report opened from disk with the network off: rendered, no
//       error, every chart drawn.
import https from "node:https";
import http from "node:http";
import puppeteer from "puppeteer-core";

// A GET without credentials, certificates unchecked: its status and challenge.
function fetchInsecure(url) {
  return new Promise((resolve, reject) => {
    const lib = url.startsWith("https:") ? https : http;
    lib.get(url, {rejectUnauthorized: false}, (res) => {
      res.resume();
      resolve({status: res.statusCode, challenge: res.headers["www-authenticate"]});
    }).on("error", reject);
  });
}

const [mode, target, ...rest] = process.argv.slice(2);
const opt = {};
for (let i = 0; i < rest.length; i += 2) opt[rest[i].replace(/^--/, "")] = rest[i + 1];
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
  console.log(`ok: ${what}`);
}

// How many of the canvases `selector` finds are drawn (over 100 non-blank pixels).
async function drawn(page, selector) {
  return page.$$eval(selector, (canvases) => canvases.filter((c) => {
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let inked = 0;
    for (let i = 3; i < d.length; i += 4) inked += d[i] > 0;
    return inked > 100;
  }).length);
}
const drawnCharts = (page) => drawn(page, ".uplot canvas");

async function consoleCheck(browser) {
  const models = (opt.models || "").split(",").filter(Boolean);
  if (opt.token) {
    // The browser, given no credentials (headless: no prompt), is refused …
    const anonymous = await browser.newPage();
    let refused;
    try {
      const r = await anonymous.goto(target, {waitUntil: "domcontentloaded"});
      refused = r.status() === 401 ? "HTTP 401" : "";
    } catch (err) {
      refused = /ERR_INVALID_AUTH_CREDENTIALS/.test(String(err)) ? "ERR_INVALID_AUTH_CREDENTIALS" : "";
    }
    check(refused !== "", `without credentials the browser is refused the console (${refused})`);
    await anonymous.close();
    // … because the server answers 401 with a Basic challenge.
    const res = await fetchInsecure(target);
    check(res.status === 401 && /^Basic /.test(res.challenge || ""),
          `the server answers 401 with a Basic challenge (${res.status} ${res.challenge})`);
  }
  const page = await browser.newPage();
  await page.setViewport({width: 1280, height: 1600});
  if (opt.token) await page.authenticate({username: "operator", password: opt.token});
  const r = await page.goto(target, {waitUntil: "domcontentloaded"});
  check(r.status() === 200, `the console loads (HTTP ${r.status()}, ${target.split(":")[0]})`);
  await page.waitForFunction(() => Number(document.body.dataset.samples || 0) >= 3, {timeout: 30000});
  check(true, "three live samples arrived without reloading");
  const names = await page.$$eval("#models tr td:first-child", (tds) => tds.map((td) => td.textContent));
  for (const m of models) check(names.includes(m), `model ${m} is listed`);
  // Many models: the busiest in a short table, every one behind a fold.
  const busiest = await page.$$eval("#busiest-models tr", (trs) => trs.length - 1);
  if (names.length > 25) {
    check(busiest === 25 && await page.$("details#all-models:not([open])") !== null,
          `the 25 busiest of ${names.length} models are shown, the rest folded`);
  }
  const offered = Number((await page.$eval("#offered-total", (e) => e.textContent)).replace(/,/g, ""));
  check(offered > 0, `the live offered rate is non-zero (${offered} r/s)`);
  const goodput = Number((await page.$eval("#goodput-total", (e) => e.textContent)).replace(/,/g, ""));
  check(goodput > 0, `the live goodput is non-zero (${goodput} r/s)`);
  // (A zero-cost model's batches take no time: 0 is a reading too.)
  const gpuSeconds = Number(await page.$eval("#gpu-seconds", (e) => e.textContent));
  check(gpuSeconds >= 0, `the GPU time batches took is shown (${gpuSeconds} GPU-s per s)`);
  const charts = await drawnCharts(page);
  check(charts >= 4, `${charts} charts are drawn`);
  check(await drawn(page, "#timeline") === 1, "the executors' batch timeline is drawn");
  return page;
}

async function reportCheck(browser) {
  const page = await browser.newPage();
  await page.setViewport({width: 1280, height: 1400});
  await page.setOfflineMode(true);  // self-contained: nothing may be fetched
  const requests = [];
  page.on("request", (q) => { if (!q.url().startsWith("file:")) requests.push(q.url()); });
  await page.goto(`file://${target}`, {waitUntil: "load"});
  await page.waitForFunction(() => document.body.dataset.rendered === "true" ||
                                   document.querySelector("pre.bad"), {timeout: 20000});
  const error = await page.$eval("body", (b) => (b.querySelector("pre.bad") || {}).textContent || "");
  check(error === "", `the ${opt.kind} report renders without error ${error}`);
  check(requests.length === 0, `the report fetched nothing (${requests.join(" ")})`);
  const charts = await drawnCharts(page);
  const want = opt.kind === "simulation" ? 4 : 2;
  check(charts >= want, `${charts} charts are drawn (want ${want})`);
  return page;
}

const browser = await puppeteer.launch({
  executablePath: chromium, headless: true,
  args: ["--no-sandbox", "--ignore-certificate-errors", "--disable-gpu", "--disable-dev-shm-usage"],
});
let failed = false;
try {
  const page = mode === "console" ? await consoleCheck(browser) : mode === "report" ? await reportCheck(browser) : null;
  if (!page) throw new Error(`unknown mode ${mode}: console or report`);
  if (opt.screenshot) {
    await page.screenshot({path: opt.screenshot, fullPage: true});
    console.log(`wrote ${opt.screenshot}`);
  }
} catch (err) {
  console.error(String(err && err.message || err));
  failed = true;
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
