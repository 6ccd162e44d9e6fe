// The module as an OpenID provider in Debian's chromium, driven by playwright-core: openid-client
// (the relying party) writes the authorization request; the browser follows it to the site's
// own sign-in page, signs in with an emailed code, comes back to authorize, meets the consent
// page (axe-core judges it at 1280 and 390 px), allows, and lands on the application's redirect URI with a code,
// which openid-client exchanges and whose ID token it verifies.
// Prints one JSON line: {checks: [{name, ok, detail}], screenshots: [...]} for t/signin_oidc_browser.t.
// usage: node oidc.mjs BASE_URL OUT_DIR CLIENT_ID SECRET_FILE REDIRECT_URI
import * as fs from "node:fs";
import * as client from "openid-client";
import { startWalk } from "./walk.mjs";

const [base, outDir, clientId, secretFile, redirectUri] = process.argv.slice(2);
const secret = fs.readFileSync(secretFile, "utf8").trim();
const walk = await startWalk({ base, outDir });
const { check, axe, shot, email, count } = walk;

await walk.run(async () => {
  const config = await client.discovery(new URL(`${base}/auth`), clientId, secret, client.ClientSecretBasic(secret),
    { execute: [client.allowInsecureRequests] });
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri, scope: "openid email", state, nonce,
    code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256",
  });

  const { page } = await walk.person({ viewport: { width: 1280, height: 900 } });
  // the application's redirect URI is not served here: the browser's arrival there is the answer
  let landed = null;
  await page.route(`${redirectUri}**`, (route) => {
    landed = route.request().url();
    return route.fulfill({ status: 200, contentType: "text/plain", body: "the application" });
  });
  await page.goto(url.href);
  await page.waitForSelector("#step-email", { state: "visible" });
  check("nobody signed in: the authorization request shows the site's sign-in page", page.url().startsWith(`${base}/auth/`), page.url());
  const who = "olga@example.com";
  const before = await count(page, who);
  await page.fill("#email", who);
  await page.click("#email-submit");
  await page.waitForSelector("#step-code", { state: "visible" });
  await page.fill("#code", (await email(page, who, before)).code);
  await page.click("#code-submit");
  await page.waitForURL(`${base}/auth/oauth2/authorize**`);
  await page.waitForSelector("button[value=allow]");
  check("signed in, the browser is back at authorize: the consent page", /asks to sign you in/.test(await page.textContent("h1")),
    await page.textContent("h1"));
  check("... naming the account", (await page.textContent("body")).includes(who));
  await axe(page, "the consent page");
  await shot(page, "oidc-consent-1280");
  // the same page on a phone-width screen
  await page.setViewportSize({ width: 390, height: 844 });
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  check("at 390 px the consent page is no wider than the screen", wide <= 390, wide);
  check("... and both its buttons are on the screen", await page.evaluate(() =>
    [...document.querySelectorAll("button")].every((b) => { const r = b.getBoundingClientRect(); return r.width > 0 && r.right <= 390; })));
  // signin_pages on: the sign-in pages' stylesheet styles it too
  const heights = await page.evaluate(() => [...document.querySelectorAll("button")].map((b) => b.getBoundingClientRect().height));
  check("... each at least 40 px high, a finger's target (the sign-in pages' stylesheet)", heights.every((h) => h >= 40), heights);
  await axe(page, "the consent page at 390 px");
  await shot(page, "oidc-consent-390");
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.click("button[value=allow]");
  try {
    await page.waitForURL(`${redirectUri}**`);
  } catch (e) {
    throw new Error(`not at the redirect URI but at ${page.url()}: ${(await page.textContent("body")).slice(0, 300)}`);
  }
  check("allowed: the browser lands on the application's redirect URI with a code", landed && /[?&]code=/.test(landed), landed);
  const tokens = await client.authorizationCodeGrant(config, new URL(landed), {
    pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true,
  });
  const claims = tokens.claims();
  check("openid-client exchanges the code and verifies the ID token", claims && claims.email === who, JSON.stringify(claims));
});
