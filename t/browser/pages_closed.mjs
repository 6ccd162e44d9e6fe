// The sign-in page of a site with registration off (signin_registration off): it asks /login,
// which sends nothing to an address without an account, and says so honestly ("if this address
// has an account", "ask the site for an invitation"); an account made by signin-admin signs in.
// Prints one JSON line {checks: [...]} for t/signin_pages_browser.t.
// usage: node pages_closed.mjs BASE_URL MEMBER_EMAIL
import { chromium } from "playwright-core";

const [base, member] = process.argv.slice(2);
const checks = [];
const check = (name, ok, detail) => checks.push({ name, ok: !!ok, detail: detail === undefined ? "" : String(detail) });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});
const mails = async (page, to) => {
  const res = await page.request.get(`${base}/_dev/mailbox`, { headers: { Accept: "application/json" } });
  return (await res.json()).emails.filter((m) => m.email === to);
};
try {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const page = await context.newPage();
  page.setDefaultTimeout(10000);
  const asked = [];
  page.on("request", (r) => { if (r.method() === "POST") asked.push(new URL(r.url()).pathname); });

  const stranger = `stranger-${Date.now()}@example.com`;
  await page.goto(`${base}/auth/`);
  await page.fill("#email", stranger);
  await page.click("#email-submit");
  await page.waitForSelector("#step-code", { state: "visible" });
  check("registration off: the page asks /login", asked.includes("/auth/login") && !asked.includes("/auth/register"),
    asked.join(" "));
  check("... and says the code comes only if the address has an account",
    await page.locator("#code-unknown-note").isVisible());
  check("... and how to get one", /invitation/.test(await page.textContent("#code-unknown-note")));
  await page.waitForTimeout(300);
  check("... and nothing is sent to an address without an account", (await mails(page, stranger)).length === 0);

  await page.click("#change-address");
  await page.fill("#email", member);
  await page.click("#email-submit");
  await page.waitForSelector("#step-code", { state: "visible" });
  let mail = null;
  for (let i = 0; i < 100 && !mail; i++) {
    mail = (await mails(page, member)).pop();
    if (!mail) await page.waitForTimeout(50);
  }
  check("an account gets its code", mail && mail.code, mail && mail.purpose);
  await page.fill("#code", mail.code);
  await page.click("#code-submit");
  await page.waitForURL(`${base}/auth/account`);
  check("... and signs in", (await page.request.get(`${base}/auth/me`)).status() === 200);
} catch (err) {
  check(`the walk finished (${err.message.split("\n")[0]})`, false, err.stack);
} finally {
  await browser.close();
}
console.log(JSON.stringify({ checks }));
