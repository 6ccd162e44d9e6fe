// OpenID Connect providers (signin_provider) in Debian's chromium, driven by playwright-core,
// against a real provider (the npm oidc-provider with its own login and consent pages,
// t/tools/oidc_provider.mjs --interactive): a person opens a gated page, goes to the sign-in
// page, continues with the provider, signs in and consents there, and lands back on the page;
// the account page lists the provider (unlink, link again); a person who cancels at the provider
// is told so on the sign-in page. axe-core judges the pages with providers on them.
// Prints one JSON line: {checks: [{name, ok, detail}], screenshots: [...]} for t/signin_providers_browser.t.
// usage: node providers.mjs BASE_URL OUT_DIR ISSUER
import { startWalk } from "./walk.mjs";

const [base, outDir, issuer] = process.argv.slice(2);
const walk = await startWalk({ base, outDir });
const { check, axe, shot, until, text } = walk;

// The provider's pages: its login form (any login, any password), then its consent.
async function atProvider(page, login) {
  await page.waitForURL(`${issuer}/interaction/**`);
  await page.fill("input[name=login]", login);
  await page.fill("input[name=password]", "anything");
  await page.click("button[type=submit]");
  await page.waitForLoadState();
  if (page.url().startsWith(`${issuer}/interaction/`)) {  // the consent page
    await page.click("button[type=submit]");
  }
}

await walk.run(async () => {
  // ---- a first sign-in from a gated page
  const { page } = await walk.person({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${base}/app/report`);
  check("a gated page sends the browser to the sign-in page", page.url().startsWith(`${base}/auth/`), page.url());
  const button = page.getByRole("link", { name: "Continue with Test ID" });
  await button.waitFor();
  check("the sign-in page offers the provider", await button.isVisible());
  await axe(page, "sign-in page with a provider");
  await shot(page, "providers-signin");
  await button.click();
  await atProvider(page, "grace");
  await page.waitForURL(`${base}/app/report`);
  check("after the provider's login and consent the browser is back on the gated page",
    /app: grace@example\.com/.test(await page.textContent("body")), await page.textContent("body"));

  // ---- the account page lists it
  await page.goto(`${base}/auth/account`);
  await page.waitForSelector("#providers-section", { state: "visible" });
  const listed = await until(page, "#provider-links", /Test ID/);
  check("the account page lists the linked provider with its address", /Test ID/.test(listed) && /grace@example\.com/.test(listed), listed);
  await axe(page, "account page with a provider");
  await shot(page, "providers-account");
  await page.getByRole("button", { name: /^Unlink Test ID/ }).click();
  const notice = await until(page, "#notice", /unlinked/);
  check("unlink (the address is another way in): said so", /Test ID is unlinked/.test(notice), notice);
  check("... and the list is empty", (await text(page, "#provider-links")) === "", await text(page, "#provider-links"));
  await page.getByRole("link", { name: "Link Test ID" }).click();
  // the provider remembers grace: maybe no page at all, maybe the consent again
  await page.waitForURL((u) => u.href.startsWith(`${base}/auth/account`) || u.href.startsWith(`${issuer}/interaction/`));
  if (page.url().startsWith(`${issuer}/`)) await atProvider(page, "grace");
  await page.waitForURL(`${base}/auth/account**`);
  const linked = await until(page, "#notice", /linked/);
  check("linking again from the account page: back with a notice", /provider is linked/.test(linked), linked);
  check("... the query is gone from the address bar", page.url() === `${base}/auth/account`, page.url());
  check("... and listed", /Test ID/.test(await until(page, "#provider-links", /Test ID/)));

  // ---- a person who cancels at the provider
  const other = await walk.person({ viewport: { width: 390, height: 844 } });
  await other.page.goto(`${base}/auth/`);
  await other.page.getByRole("link", { name: "Continue with Test ID" }).click();
  await other.page.waitForURL(`${issuer}/interaction/**`);
  await other.page.getByRole("link", { name: /Cancel/ }).click();
  await other.page.waitForURL(`${base}/auth/**`);
  const error = await until(other.page, "#error", /cancelled/);
  check("cancelling at the provider: the sign-in page says so", /Signing in was cancelled at the provider/.test(error), error);
  check("... and the error code left the address bar", !/provider_error/.test(other.page.url()), other.page.url());
  await axe(other.page, "sign-in page after a cancelled provider sign-in (mobile)");
  await shot(other.page, "providers-cancelled");
});
