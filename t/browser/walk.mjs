// What the browser walks (pages.mjs, passkeys.mjs) share: axe-core judging a page, screenshots,
// the dev mailbox read as a script reads it, waiting for a text, and signing up by emailed code.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

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
