// Passkeys (signin_passkeys) in Debian's chromium with the DevTools WebAuthn virtual
// authenticator (ctap2, internal, resident keys; user verification on and off), driven by
// playwright-core: a person adds a passkey on the account page, signs in with it by the button
// and by the address field's suggestion (conditional mediation), as a bearer token, and removes
// it. A second implementation, @simplewebauthn/server, verifies the same registration and
// assertions the module accepted, and both refuse the same tampered ones.
// Prints one JSON line: {checks: [{name, ok, detail}], screenshots: [...]} for t/signin_passkeys_browser.t.
// usage: node passkeys.mjs BASE_URL OUT_DIR
import { execFileSync } from "node:child_process";
import { startWalk } from "./walk.mjs";
import { verifyAuthenticationResponse, verifyRegistrationResponse } from "@simplewebauthn/server";

const [base, outDir] = process.argv.slice(2);
const rpId = new URL(base).hostname;
const stamp = Date.now();
const oathtool = process.env.OATHTOOL || "";

const walk = await startWalk({ base, outDir, chromiumArgs: [`--host-resolver-rules=MAP ${rpId} 127.0.0.1`] });
const { browser, check, axe, shot, email, until, text, signUp } = walk;

// A browser of its own with one virtual authenticator. The virtual authenticator answers a
// conditional request (the address field's suggestions) at once, as if the person picked the
// passkey: `conditional: false` makes the browser say it has no such suggestions, so that the
// sign-in page waits for the button.
async function person({ uv = true, conditional = true } = {}) {
  const { context, page } = await walk.person({ viewport: { width: 1280, height: 900 } }, conditional ? undefined : () => {
    if (window.PublicKeyCredential) PublicKeyCredential.isConditionalMediationAvailable = async () => false;
  });
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: uv,
               isUserVerified: uv, automaticPresenceSimulation: true },
  });
  return { context, page, cdp, authenticatorId };
}
const status = async (page, path, headers = {}) => (await page.request.get(`${base}${path}`, { headers })).status();

// In the page: fetch JSON from the API (same origin: the browser adds Origin and the cookies).
const api = (page, path, body) => page.evaluate(async ([p, b]) => {
  const res = await fetch(p, b === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(b) });
  let json = null;
  try { json = await res.json(); } catch (e) { json = null; }
  return { status: res.status, body: json };
}, [`${base}/auth/${path}`, body]);
// In the page: navigator.credentials.create/get with the server's options; the credential's JSON.
const ceremony = (page, kind, options) => page.evaluate(async ([k, o]) => {
  const { publicKeyOptions, credentialJSON } = await import("/auth/assets/common.js");
  const c = k === "create" ? await navigator.credentials.create({ publicKey: publicKeyOptions(o) })
    : await navigator.credentials.get({ publicKey: publicKeyOptions(o) });
  return credentialJSON(c);
}, [kind, options]);

const b64 = (buf) => Buffer.from(buf).toString("base64url");
const unb64 = (s) => Buffer.from(s, "base64url");
// The credential with its client data's member changed.
function withClientData(cred, change) {
  const cd = JSON.parse(unb64(cred.response.clientDataJSON).toString());
  change(cd);
  return { ...cred, response: { ...cred.response, clientDataJSON: b64(Buffer.from(JSON.stringify(cd))) } };
}
// The credential with one byte of a binary member changed (at an offset from its start, or from
// where `find` is found in it).
function withByte(cred, member, offset, change, find) {
  const bytes = unb64(cred.response[member]);
  const at = (find ? bytes.indexOf(find) : 0) + offset;
  bytes[at] = change(bytes[at]);
  return { ...cred, response: { ...cred.response, [member]: b64(bytes) } };
}
// Whether @simplewebauthn/server accepts it.
async function swaRegistration(cred, options, expected = {}) {
  try {
    const v = await verifyRegistrationResponse({ response: cred, expectedChallenge: options.challenge, expectedOrigin: base,
      expectedRPID: rpId, requireUserVerification: false, ...expected });
    return v.verified ? v : null;
  } catch (e) {
    return null;
  }
}
async function swaAssertion(cred, challenge, credential, expected = {}) {
  try {
    const v = await verifyAuthenticationResponse({ response: cred, expectedChallenge: challenge, expectedOrigin: base,
      expectedRPID: rpId, credential, requireUserVerification: false, ...expected });
    return v.verified ? v : null;
  } catch (e) {
    return null;
  }
}

await walk.run(async () => {
  // ---- a person adds a passkey on the account page, then signs in with it
  const a = await person({ conditional: false });
  const ann = `ann-${stamp}@example.com`;
  await signUp(a.page, ann);
  const section = await a.page.waitForSelector("#passkeys-section", { state: "visible" }).then(() => true, () => false);
  check("the account page has a Passkeys section", section);
  await a.page.fill("#passkey-name", "Test laptop");
  await a.page.click("#passkey-add");
  const added = await until(a.page, "#notice", /Passkey added/);
  check("'Add a passkey' makes one with the browser's authenticator", /Passkey added: Test laptop/.test(added),
    `${added} | ${await text(a.page, "#error")}`);
  check("... and lists it", (await text(a.page, "#passkeys")).includes("Test laptop"), await text(a.page, "#passkeys"));
  await shot(a.page, "account-passkeys-1280");
  await axe(a.page, "account page with a passkey");
  const creds = (await a.cdp.send("WebAuthn.getCredentials", { authenticatorId: a.authenticatorId })).credentials;
  check("the authenticator holds one resident credential", creds.length === 1 && creds[0].isResidentCredential,
    JSON.stringify(creds.map((c) => c.isResidentCredential)));

  await a.page.click("#sign-out");
  await a.page.waitForSelector("#step-email", { state: "visible" });
  check("signed out", (await status(a.page, "/auth/me")) === 401);
  check("the sign-in page offers 'Sign in with a passkey'", await a.page.locator("#use-passkey").isVisible());
  await shot(a.page, "signin-passkey-1280");
  await axe(a.page, "sign-in page with passkeys");
  await a.page.click("#use-passkey");
  await a.page.waitForURL(`${base}/auth/account`);
  check("'Sign in with a passkey' signs in", (await status(a.page, "/auth/me")) === 200);
  check("... with user verification: two factors (signin_require mfa passes)", (await status(a.page, "/strong/")) === 200,
    await status(a.page, "/strong/"));

  // the address field's suggestion (conditional mediation): the virtual authenticator answers it
  const d = await person();
  const dan = `dan-${stamp}@example.com`;
  await signUp(d.page, dan);
  const dOptions = (await api(d.page, "passkeys/register/options", {})).body;
  const dAdded = await api(d.page, "passkeys/register", { credential: await ceremony(d.page, "create", dOptions) });
  check("a passkey registered through the API", dAdded.status === 201, JSON.stringify(dAdded));
  await api(d.page, "logout", {});
  await d.page.goto(`${base}/auth/?return_to=${encodeURIComponent("/strong/x")}`);
  let conditional = true;
  try {
    await d.page.waitForURL(`${base}/strong/x`, { timeout: 8000 });
  } catch (e) {
    conditional = false;
  }
  check("a passkey chosen from the address field's suggestions signs in and returns where the visitor was going",
    conditional, d.page.url());
  await d.context.close();
  await a.page.goto(`${base}/auth/account`);

  // bearer
  const opts = await api(a.page, "passkeys/login/options", {});
  check("login options: a challenge, this rpId, no allowCredentials (discoverable)",
    opts.status === 200 && opts.body.rpId === rpId && Array.isArray(opts.body.allowCredentials) &&
    opts.body.allowCredentials.length === 0 && opts.body.challenge.length >= 22, JSON.stringify(opts.body));
  const forToken = await ceremony(a.page, "get", opts.body);
  const token = await a.page.request.post(`${base}/auth/passkeys/token`, { data: { credential: forToken } });
  const tokenBody = await token.json();
  check("POST /passkeys/token answers a bearer token", token.status() === 200 && tokenBody.token_type === "Bearer",
    JSON.stringify(tokenBody));
  const bearerContext = await browser.newContext();
  check("... which signs in", (await (await bearerContext.request.get(`${base}/auth/me`,
    { headers: { Authorization: `Bearer ${tokenBody.access_token}` } })).status()) === 200);
  await bearerContext.close();

  // remove, then the passkey no longer signs in
  await a.page.goto(`${base}/auth/account`);
  await a.page.waitForSelector("#passkeys li");
  await a.page.click('button[aria-label="Remove passkey Test laptop"]');
  const removed = await until(a.page, "#notice", /removed/);
  check("'Remove' removes it", /removed/.test(removed), removed);
  check("... the list is empty", (await a.page.locator("#passkeys li").count()) === 0);
  await a.page.click("#sign-out");
  await a.page.waitForSelector("#step-email", { state: "visible" });
  await a.page.click("#use-passkey");
  const refusedText = await until(a.page, "#error", /not accepted/);
  check("a removed passkey (still in the authenticator) is refused, and the page says so", /not accepted/.test(refusedText),
    refusedText);
  check("... nobody is signed in", (await status(a.page, "/auth/me")) === 401);
  await a.context.close();

  // ---- a second implementation checks the module's verification
  const b = await person();
  const bob = `bob-${stamp}@example.com`;
  await signUp(b.page, bob);
  const regOptions = (await api(b.page, "passkeys/register/options", {})).body;
  check("creation options: ES256, EdDSA and RS256, resident key required, attestation none",
    [-7, -8, -257].every((alg) => regOptions.pubKeyCredParams.some((p) => p.alg === alg)) &&
    regOptions.authenticatorSelection.residentKey === "required" && regOptions.attestation === "none" &&
    regOptions.rp.id === rpId, JSON.stringify(regOptions));
  const reg = await ceremony(b.page, "create", regOptions);
  const swaReg = await swaRegistration(reg, regOptions);
  check("@simplewebauthn/server verifies the registration", swaReg, "refused");
  const regAnswer = await api(b.page, "passkeys/register", { credential: reg, name: "Bob's key" });
  check("the module accepts the same registration (201)", regAnswer.status === 201, JSON.stringify(regAnswer));
  const tamperedRegs = [
    ["a wrong origin", withClientData(reg, (cd) => { cd.origin = "https://evil.example"; }), /another origin/],
    ["a wrong rpId hash", withByte(reg, "attestationObject", 0, (x) => x ^ 1, Buffer.from(
      await crypto.subtle.digest("SHA-256", new TextEncoder().encode(rpId)))), /relying party/],
    ["the UP flag cleared", withByte(reg, "attestationObject", 32, (x) => x & ~1, Buffer.from(
      await crypto.subtle.digest("SHA-256", new TextEncoder().encode(rpId)))), /presence/],
  ];
  for (const [what, bad, why] of tamperedRegs) {
    const mine = await api(b.page, "passkeys/register", { credential: bad });
    const theirs = await swaRegistration(bad, regOptions);
    check(`registration with ${what}: both refuse`, mine.status === 400 && why.test(mine.body.error) && !theirs,
      `module ${mine.status} ${mine.body && mine.body.error}, simplewebauthn ${theirs ? "accepted" : "refused"}`);
  }
  const swaCredential = { id: swaReg.registrationInfo.credential.id, publicKey: swaReg.registrationInfo.credential.publicKey,
    counter: swaReg.registrationInfo.credential.counter };

  // assertions: the same accepted by both; tampered ones refused by both
  const assertion = async () => {
    const o = (await api(b.page, "passkeys/login/options", {})).body;
    return { options: o, cred: await ceremony(b.page, "get", o) };
  };
  const first = await assertion();
  const second = await assertion();
  const counter = (c) => unb64(c.response.authenticatorData).readUInt32BE(33);
  check("the authenticator's counter moves forward", counter(second.cred) > counter(first.cred),
    `${counter(first.cred)} -> ${counter(second.cred)}`);
  const swaSecond = await swaAssertion(second.cred, second.options.challenge, swaCredential);
  check("@simplewebauthn/server verifies an assertion", swaSecond, "refused");
  const used = await b.page.request.post(`${base}/auth/passkeys/token`, { data: { credential: second.cred } });
  check("the module accepts the same assertion", used.status() === 200, used.status());
  const replay = await b.page.request.post(`${base}/auth/passkeys/token`, { data: { credential: second.cred } });
  const fresh = (await api(b.page, "passkeys/login/options", {})).body.challenge;
  check("a replayed assertion (its challenge spent): both refuse",
    replay.status() === 401 && !(await swaAssertion(second.cred, fresh, { ...swaCredential, counter: counter(second.cred) })),
    replay.status());
  const regressed = await b.page.request.post(`${base}/auth/passkeys/token`, { data: { credential: first.cred } });
  check("an older assertion (counter regression): both refuse", regressed.status() === 401 &&
    !(await swaAssertion(first.cred, first.options.challenge, { ...swaCredential, counter: counter(second.cred) })),
    regressed.status());
  const tampered = [
    ["a flipped signature byte", (c) => withByte(c, "signature", 10, (x) => x ^ 1)],
    ["the UP flag cleared", (c) => withByte(c, "authenticatorData", 32, (x) => x & ~1)],
    ["a wrong origin", (c) => withClientData(c, (cd) => { cd.origin = "https://evil.example"; })],
    ["a wrong rpId hash", (c) => withByte(c, "authenticatorData", 0, (x) => x ^ 1)],
  ];
  let last = counter(second.cred);
  for (const [what, tamper] of tampered) {
    const fresh1 = await assertion();
    const bad = tamper(fresh1.cred);
    const mine = await b.page.request.post(`${base}/auth/passkeys/token`, { data: { credential: bad } });
    const theirs = await swaAssertion(bad, fresh1.options.challenge, { ...swaCredential, counter: last });
    check(`an assertion with ${what}: both refuse`, mine.status() === 401 && !theirs,
      `module ${mine.status()}, simplewebauthn ${theirs ? "accepted" : "refused"}`);
    // the untampered one still passes both: the refusal was the tampering's
    check(`... and the same assertion untampered passes both (${what})`,
      !!(await swaAssertion(fresh1.cred, fresh1.options.challenge, { ...swaCredential, counter: last })), "refused");
    last = counter(fresh1.cred);
  }
  await b.context.close();

  // ---- without user verification: one factor. Chrome makes a discoverable credential only with
  // user verification, so the assertion is the one without it: a client may ask for none
  // ("discouraged") where the server prefers it.
  const c = await person();
  const cat = `cat-${stamp}@example.com`;
  await signUp(c.page, cat);
  const cOptions = (await api(c.page, "passkeys/register/options", {})).body;
  const cReg = await api(c.page, "passkeys/register", { credential: await ceremony(c.page, "create", cOptions) });
  check("cat registers a passkey", cReg.status === 201, JSON.stringify(cReg));
  const withoutUv = async () => {
    const o = (await api(c.page, "passkeys/login/options", {})).body;
    const cred = await ceremony(c.page, "get", { ...o, userVerification: "discouraged" });
    return { cred, uv: (unb64(cred.response.authenticatorData)[32] & 4) !== 0 };
  };
  const plain = await withoutUv();
  check("an assertion without user verification (UV flag clear)", !plain.uv, "UV set");
  const one = await c.page.request.post(`${base}/auth/passkeys/token`, { data: { credential: plain.cred } });
  const oneBody = await one.json();
  check("... signs in a user without a second factor", one.status() === 200, one.status());
  const strong = await (await browser.newContext()).request.get(`${base}/strong/`,
    { headers: { Authorization: `Bearer ${oneBody.access_token}` } });
  check("... as one factor: signin_require mfa refuses it", strong.status() === 403, strong.status());
  if (!oathtool) {
    checks.push({ name: "the second factor after a passkey without UV needs oathtool", ok: true, skip: true });
  } else {
    const setup = (await api(c.page, "mfa/totp/setup", {})).body;
    const code = execFileSync(oathtool, ["--totp", "-b", setup.secret]).toString().trim();
    const on = await api(c.page, "mfa/totp/confirm", { code });
    check("cat turns on TOTP", on.status === 200, JSON.stringify(on));
    const pending = await c.page.request.post(`${base}/auth/passkeys/token`, { data: { credential: (await withoutUv()).cred } });
    const pendingBody = await pending.json();
    check("a passkey without user verification, for a user with a second factor: 202 mfa_required",
      pending.status() === 202 && pendingBody.mfa_required === true, JSON.stringify(pendingBody));
  }
  await c.context.close();
});
