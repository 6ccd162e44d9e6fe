// Walks the administrators' page (signin_admin) in Debian's chromium, driven by playwright-core:
// an administrator signs in through the sign-in page with a second factor (a recovery code), finds
// a person by the search, opens them (their sessions shown), suspends them and finds the entry in
// the audit (with a time range, and the CSV and JSON links), invites someone, reads the dashboard's
// charts, at 1280 px and again at 390 px (unsuspend), in light and dark; the page in German; a
// signed-in person without the role gets the 403 page. axe-core judges every state; screenshots
// go to OUT_DIR.
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
  // the list before the search may still be on the page for a moment beside the result
  await page.waitForFunction(() => document.querySelectorAll("#users tr").length === 1, null, { timeout: 5000 })
    .catch(() => {});
  check(`${size}: the search finds the person`, (await page.locator("#users tr").count()) === 1,
    await text(page, "#users"));
  await row.click();
  await page.waitForSelector("#person-view", { state: "visible" });
  check(`${size}: the person's page names them`, (await text(page, "#person-title")) === target);
  const sessions = await text(page, "#person-sessions");
  check(`${size}: ... and lists their session with its browser and client`,
    /127\.0\.0\.1/.test(sessions) && (await page.locator("#person-sessions li").count()) >= 1, sessions);
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
  // a time range: from an hour ago (the entry is in it), then from tomorrow (nothing is)
  const local = (ms) => {
    const d = new Date(ms);
    return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
  };
  await page.fill("#audit-since", local(Date.now() - 3600 * 1000));
  await page.click("#audit-search button[type=submit]");
  const ranged = await until(page, "#audit", new RegExp(kind.replace(".", "\\.")));
  const json = await page.getAttribute("#audit-json", "href");
  check(`${size}: from an hour ago, the entry is still there, and the JSON link carries the range`,
    ranged.includes(target) && /since=\d{4}-\d\d-\d\dT/.test(json) && !/format=/.test(json), json);
  await page.fill("#audit-since", local(Date.now() + 24 * 3600 * 1000));
  await page.click("#audit-search button[type=submit]");
  await page.waitForFunction(() => document.querySelectorAll("#audit li").length === 0, null, { timeout: 5000 })
    .catch(() => {});
  check(`${size}: from tomorrow, nothing`, (await page.locator("#audit li").count()) === 0, await text(page, "#audit"));
  await page.fill("#audit-since", "");
}

// The dashboard: totals and two charts of bars, each chart named with its totals.
async function dashboard(page, size) {
  await page.goto(`${base}/auth/admin/#dashboard`);
  await page.waitForSelector("#dashboard-view", { state: "visible" });
  await page.waitForSelector("#minutes-chart svg.bars");
  const label = await page.getAttribute("#minutes-chart svg", "aria-label");
  check(`${size}: the dashboard draws the last hour's sign-ins`, /Sign-ins: [1-9]/.test(label || ""), label);
  check(`${size}: ... and the two days'`, (await page.locator("#hours-chart svg rect.signins").count()) === 48);
  const totals = await text(page, "#totals");
  check(`${size}: ... with the totals`, /Sign-ins/.test(totals) && /Emails sent/.test(totals), totals);
  const scrolls = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
  check(`${size}: ... without scrolling sideways`, !scrolls);
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
  // the notice comes first, then the person read again with the new buttons: wait for them (5 s)
  const offered = await a.page.waitForSelector("#unsuspend", { state: "visible", timeout: 5000 }).then(() => true, () => false);
  check("1280: ... and now offers unsuspend", offered);
  await axe(a.page, "person, 1280, light");
  await a.page.emulateMedia({ colorScheme: "dark" });
  await axe(a.page, "person, 1280, dark");
  await a.page.emulateMedia({ colorScheme: "light" });
  await shot(a.page, "admin-person-1280");
  await auditShows(a.page, "1280", "user.suspended");
  await axe(a.page, "audit, 1280");
  await shot(a.page, "admin-audit-1280");
  await dashboard(a.page, "1280");
  await axe(a.page, "dashboard, 1280, light");
  await shot(a.page, "admin-dashboard-1280");
  await a.page.emulateMedia({ colorScheme: "dark" });
  await axe(a.page, "dashboard, 1280, dark");
  await a.page.emulateMedia({ colorScheme: "light" });

  // ---- an invitation from the list
  const invitee = `newbie-${Date.now()}@example.com`;
  await a.page.goto(`${base}/auth/admin/`);
  await a.page.waitForSelector("#users-view", { state: "visible" });
  await a.page.fill("#invite-email", invitee);
  await a.page.fill("#invite-roles", "support");
  await a.page.uncheck("#invite-send");
  await a.page.click("#invite-form button[type=submit]");
  const invited = await until(a.page, "#notice", /invited/);
  check("1280: an invitation says so", invited.includes(invitee), invited + " / " + (await text(a.page, "#error")));
  await a.page.fill("#q", invitee);
  await a.page.click("#search button[type=submit]");
  const row = await until(a.page, "#users", new RegExp(invitee.replace(/[.]/g, "\\.")));
  check("1280: ... and the person is there, pending, with the role", /Pending/.test(row) && /support/.test(row), row);

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
  await axe(p.page, "audit, 390");
  await shot(p.page, "admin-audit-390");
  await dashboard(p.page, "390");
  await axe(p.page, "dashboard, 390");
  await shot(p.page, "admin-dashboard-390");

  // ---- in German: the page's texts and its script's
  const g = await walk.person({ viewport: desktop, locale: "de-DE", storageState: state });
  await g.page.goto(`${base}/auth/admin/`);
  await g.page.waitForSelector("#users-view", { state: "visible" });
  check("de: the page is in German", (await text(g.page, "h1")) === "Verwaltung", await text(g.page, "h1"));
  const states = await text(g.page, "#users");
  check("de: ... and so is what its script writes", /Aktiv/.test(states) && !/\bActive\b/.test(states), states);
  await axe(g.page, "people, de");

  // ---- someone without the role
  const c = await walk.person({ viewport: desktop });
  await signUp(c.page, `nobody-${Date.now()}@example.com`);
  const answer = await c.page.goto(`${base}/auth/admin/`);
  check("without the role: 403", answer.status() === 403, String(answer.status()));
  const heading = await text(c.page, "h1");
  check("... the page that says it is not for this account", /Not for this account/.test(heading), heading);
  await c.page.waitForSelector("#sign-out", { state: "visible" });
  check("... offering to sign out and use another one", await visible(c.page, "#sign-out"));
  check("... and no list", (await c.page.locator("#users-view").count()) === 0);
  await axe(c.page, "refused, 1280");
});
