// Walks the administrators' page (signin_admin) in Debian's chromium, driven by playwright-core:
// an administrator signs in through the sign-in page with a second factor (a recovery code), finds
// a person by the search, opens them, suspends them and finds the entry in the audit, at 1280 px
// and again at 390 px (unsuspend), in light and dark; a signed-in person without the role is told
// the page is not for them. axe-core judges every state; screenshots go to OUT_DIR.
// Prints one JSON line: {checks: [{name, ok, detail}], screenshots: [...]} for t/signin_admin_browser.t.
// usage: node admin.mjs BASE_URL OUT_DIR ADMIN_EMAIL RECOVERY_CODE PERSON_EMAIL
import { startWalk } from "./walk.mjs";

const [base, outDir, admin, recovery, target] = process.argv.slice(2);
const desktop = { width: 1280, height: 900 };
const phone = { width: 390, height: 844 };

const walk = await startWalk({ base, outDir });
const { check, axe, shot, email, count, until, text, signUp } = walk;
const visible = (page, selector) => page.locator(selector).isVisible();

// Signs the administrator in on the sign-in page: the emailed code, then the second step with a
// recovery code, so that the session may change accounts.
async function signInWithFactor(page) {
  const before = await count(page, admin);
  await page.goto(`${base}/auth/`);
  await page.fill("#email", admin);
  await page.click("#email-submit");
  await page.waitForSelector("#step-code", { state: "visible" });
  await page.fill("#code", (await email(page, admin, before)).code);
  await page.click("#code-submit");
  await page.waitForSelector("#step-mfa", { state: "visible" });
  await page.click("#mfa-switch");
  await page.fill("#mfa-recovery-code", recovery);
  await page.click("#mfa-submit");
  await page.waitForURL(`${base}/auth/account`);
}

// Searches for the person and opens their page.
async function openPerson(page, size) {
  await page.fill("#q", target);
  await page.click("#search button[type=submit]");
  const row = page.locator("#users a", { hasText: target });
  await row.waitFor({ state: "visible" });
  check(`${size}: the search finds the person`, (await page.locator("#users tr").count()) === 1,
    await text(page, "#users"));
  await row.click();
  await page.waitForSelector("#person-view", { state: "visible" });
  check(`${size}: the person's page names them`, (await text(page, "#person-title")) === target);
}

async function auditShows(page, size, kind) {
  await page.goto(`${base}/auth/admin/#audit`);
  await page.waitForSelector("#audit-view", { state: "visible" });
  await page.fill("#audit-kind", kind);
  await page.fill("#audit-email", target);
  await page.click("#audit-search button[type=submit]");
  const entry = await until(page, "#audit", new RegExp(kind.replace(".", "\\.")));
  check(`${size}: the audit shows ${kind} for the person`, entry.includes(target), entry);
  check(`${size}: the CSV link carries the filter`,
    /format=csv/.test(await page.getAttribute("#audit-csv", "href")) &&
    /kind=/.test(await page.getAttribute("#audit-csv", "href")));
}

await walk.run(async () => {
  // ---- 1280 px, light then dark
  const a = await walk.person({ viewport: desktop });
  await signInWithFactor(a.page);
  await a.page.goto(`${base}/auth/admin/`);
  await a.page.waitForSelector("#users-view", { state: "visible" });
  check("1280: the list of people shows", (await a.page.locator("#users tr").count()) >= 2);
  await axe(a.page, "people, 1280, light");
  await shot(a.page, "admin-people-1280");
  await a.page.emulateMedia({ colorScheme: "dark" });
  await axe(a.page, "people, 1280, dark");
  await a.page.emulateMedia({ colorScheme: "light" });
  await openPerson(a.page, "1280");
  check("1280: suspend is offered", await visible(a.page, "#suspend"));
  await a.page.click("#suspend");
  const notice = await until(a.page, "#notice", /suspended/);
  check("1280: suspending says so", /The account is suspended/.test(notice), notice + " / " + (await text(a.page, "#error")));
  check("1280: ... and now offers unsuspend", await visible(a.page, "#unsuspend"));
  await axe(a.page, "person, 1280, light");
  await a.page.emulateMedia({ colorScheme: "dark" });
  await axe(a.page, "person, 1280, dark");
  await a.page.emulateMedia({ colorScheme: "light" });
  await shot(a.page, "admin-person-1280");
  await auditShows(a.page, "1280", "user.suspended");
  await axe(a.page, "audit, 1280");
  await shot(a.page, "admin-audit-1280");

  // ---- 390 px: the same session, on a phone
  const state = await a.context.storageState();
  const p = await walk.person({ viewport: phone, isMobile: true, hasTouch: true, storageState: state });
  await p.page.goto(`${base}/auth/admin/`);
  await p.page.waitForSelector("#users-view", { state: "visible" });
  const scrolls = await p.page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
  check("390: the list does not scroll sideways", !scrolls);
  check("390: the table's header is hidden, each cell names its column",
    !(await visible(p.page, "#users-table thead")) &&
    (await p.page.locator("#users td[data-label]").count()) > 0);
  await axe(p.page, "people, 390, light");
  await shot(p.page, "admin-people-390");
  await p.page.emulateMedia({ colorScheme: "dark" });
  await axe(p.page, "people, 390, dark");
  await p.page.emulateMedia({ colorScheme: "light" });
  await openPerson(p.page, "390");
  await p.page.click("#unsuspend");
  const back = await until(p.page, "#notice", /no longer/);
  check("390: unsuspending says so", /no longer suspended/.test(back), back + " / " + (await text(p.page, "#error")));
  await axe(p.page, "person, 390");
  await shot(p.page, "admin-person-390");
  await auditShows(p.page, "390", "user.restored");

  // ---- someone without the role
  const c = await walk.person({ viewport: desktop });
  await signUp(c.page, `nobody-${Date.now()}@example.com`);
  await c.page.goto(`${base}/auth/admin/`);
  const refused = await until(c.page, "#error", /may not/);
  check("without the role: the page says it is not for this account", /may not open the administration/.test(refused),
    refused);
  check("... and shows no list", !(await visible(c.page, "#users-view")));
  await axe(c.page, "refused, 1280");
});
