// Walks the demo sign-in page (examples/index.html) in Debian's chromium, driven by
// playwright-core: ask for a code, read it from the dev mailbox, sign in, open the protected
// legacy app, sign out. Prints one JSON line of observations for t/signin_browser.t to assert.
// usage: node signin.mjs BASE_URL SCREENSHOT_PATH
import { chromium } from "playwright-core";

const [base, shot] = process.argv.slice(2);
const seen = {};
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  await page.goto(base + "/");
  seen.signed_out_form = await page.isVisible("#ask");
  const email = `browser-${Date.now()}@example.com`;
  await page.fill("#email", email);
  await page.click("button[value=register]");
  await page.waitForFunction(() => document.getElementById("status").textContent.includes("on its way"));
  seen.status_after_request = await page.textContent("#status");

  // the code, from the dev mailbox (a second tab, as a person would open it)
  let token = null;
  for (let i = 0; i < 50 && !token; i++) {
    const res = await page.request.get(base + "/_dev/mailbox");
    const box = await res.json();
    const mail = box.emails.filter((m) => m.email === email).pop();
    token = mail && mail.code;  // what a person reads in the email: the short code
    if (!token) await page.waitForTimeout(100);
  }
  seen.got_token = Boolean(token);
  await page.fill("#token", token);
  await page.click("#exchange button");
  await page.waitForSelector("#signed-in", { state: "visible" });
  seen.signed_in_as = await page.textContent("#who");
  const cookies = await page.context().cookies();
  const c = cookies.find((x) => x.name === "svc_dev_session");
  seen.cookie = c ? { httpOnly: c.httpOnly, secure: c.secure, sameSite: c.sameSite, path: c.path } : null;
  seen.cookie_visible_to_script = await page.evaluate(() => document.cookie.includes("svc_dev_session"));
  await page.screenshot({ path: shot, fullPage: true });

  await page.click("a[href='/app/']");
  seen.legacy_app = (await page.textContent("body")).trim();
  await page.goBack();
  await page.waitForSelector("#signed-in", { state: "visible" });
  await page.click("#logout");
  await page.waitForSelector("#signed-out", { state: "visible" });
  seen.after_logout_me = (await page.request.get(base + "/auth/me")).status();
  const app = await page.request.get(base + "/app/");
  seen.after_logout_app = app.status();
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
