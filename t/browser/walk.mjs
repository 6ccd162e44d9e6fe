// What the browser walks (pages.mjs, passkeys.mjs) share: Debian's chromium, a browser per person
// with its CSP violations and script errors recorded, the observations and their one JSON line,
// axe-core judging a page, screenshots, the dev mailbox read as a script reads it, waiting for a
// text, and signing up by emailed code.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

// The helpers of one walk: `check(name, ok, detail)` records an observation, `screenshots` the
// files written to outDir.
export function helpers({ base, outDir, check, screenshots }) {
  const text = async (page, selector) => ((await page.textContent(selector)) || "").trim();
  // The newest email to an address once there are more than `after` (or null after 5 s).
  async function email(page, to, after = 0) {
    for (let i = 0; i < 100; i++) {
      const res = await page.request.get(`${base}/_dev/mailbox`, { headers: { Accept: "application/json" } });
      const list = (await res.json()).emails.filter((m) => m.email === to);
      if (list.length > after) return list[list.length - 1];
      await page.waitForTimeout(50);
    }
    return null;
  }
  return {
    text,
    email,
    async count(page, to) {
      const res = await page.request.get(`${base}/_dev/mailbox`, { headers: { Accept: "application/json" } });
      return (await res.json()).emails.filter((m) => m.email === to).length;
    },
    // axe-core on the page as it is now: serious and critical violations fail.
    async axe(page, state) {
      await page.evaluate(axeSource);
      const result = await page.evaluate(async () => {
        const r = await globalThis.axe.run(document, { resultTypes: ["violations"] });
        return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 3) }));
      });
      const bad = result.filter((v) => v.impact === "serious" || v.impact === "critical");
      check(`axe: no serious or critical violation (${state})`, bad.length === 0, JSON.stringify(bad));
    },
    async shot(page, name) {
      const path = `${outDir}/${name}.png`;
      await page.screenshot({ path, fullPage: true });
      screenshots.push(path);
    },
    // The text of selector once it matches re (or after 5 s, whatever it is then).
    async until(page, selector, re) {
      let now = "";
      for (let i = 0; i < 100; i++) {
        now = await text(page, selector);
        if (re.test(now)) break;
        await page.waitForTimeout(50);
      }
      return now;
    },
    // Signs `address` up (or in) by its emailed code on the sign-in page; waits for the account page.
    async signUp(page, address) {
      await page.goto(`${base}/auth/`);
      await page.fill("#email", address);
      await page.click("#email-submit");
      await page.waitForSelector("#step-code", { state: "visible" });
      await page.fill("#code", (await email(page, address)).code);
      await page.click("#code-submit");
      await page.waitForURL(`${base}/auth/account`);
      await page.waitForSelector("#account", { state: "visible" });
    },
  };
}

// Starts a walk: chromium (with `chromiumArgs` too), `check(name, ok, detail)` for each
// observation, `person(contextOptions, init)` for a browser of its own (`init` runs before every
// page's scripts), and the helpers above. `run(body)` runs the walk and prints its one JSON line
// {checks, screenshots}: an exception is a failed check, and a CSP violation or script error on
// any page is one too.
export async function startWalk({ base, outDir, chromiumArgs = [] }) {
  const checks = [];
  const screenshots = [];
  const problems = [];
  const check = (name, ok, detail) => checks.push({ name, ok: !!ok, detail: detail === undefined ? "" : String(detail) });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync", ...chromiumArgs],
  });
  async function person(contextOptions, init) {
    const context = await browser.newContext(contextOptions);
    if (init) await context.addInitScript(init);
    const page = await context.newPage();
    page.setDefaultTimeout(10000);
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(`CSP: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`script error: ${e.message}`));
    return { context, page };
  }
  return {
    browser,
    check,
    checks,
    person,
    ...helpers({ base, outDir, check, screenshots }),
    async run(body) {
      try {
        await body();
        check("no CSP violation and no script error on any page", problems.length === 0, problems.join(" | "));
      } catch (err) {
        check(`the walk finished (${err.message.split("\n")[0]})`, false, err.stack);
      } finally {
        await browser.close();
      }
      console.log(JSON.stringify({ checks, screenshots }));
    },
  };
}
