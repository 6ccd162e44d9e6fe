// The sign-in page (signin_pages): email then code, a link from an email, password sign-in when
// signin_passwords is on. Each way in is one <section id="step-..."> of signin.html and one
// show*() here; a new way in (a second factor, a passkey, a provider) is a new pair. With ?add=1
// (or "Add another account"), the sign-in adds an account to this browser, keeping the others.
import {
  accountName, busy, call, credentialJSON, explain, messages, passkeysAvailable, passkeyTrouble, providerLink,
  providerTrouble, publicKeyOptions, safeReturnTo, t,
} from "./common.js";

const $ = (id) => document.getElementById(id);
const settings = {
  email: document.body.dataset.email !== "off",
  passwords: document.body.dataset.passwords === "on",
  passkeys: document.body.dataset.passkeys === "on" && passkeysAvailable(),
  registration: document.body.dataset.registration === "on",
  resendSeconds: Number(document.body.dataset.resendSeconds) || 60,
  rememberDays: Number(document.body.dataset.rememberDays) || 0,
};
const msg = messages();
// Where to go once signed in, and whether the sign-in adds an account. A link from the email
// opens in another tab, without the query of the tab that asked for the code: that tab leaves
// {path, add} in localStorage for 15 minutes.
const kReturnKey = "signin.return_to";
function remembered() {
  try {
    const saved = JSON.parse(localStorage.getItem(kReturnKey) || "null");
    if (saved && Date.now() - saved.at < 15 * 60 * 1000) return saved;
  } catch (e) {
    return null;
  }
  return null;
}
let returnTo = safeReturnTo(new URLSearchParams(location.search).get("return_to"));
let adding = new URLSearchParams(location.search).get("add") === "1";  // keep the signed-in account
let address = "";   // where the last code went
let linkToken = ""; // the token of a link, kept in memory only
let resendTimer = null;
let wrongCodes = 0; // the server cancels an address's codes at the fifth wrong one
let mfaToken = "";  // a sign-in waiting for its second factor (5 minutes), in memory only
let confirmToken = "";  // an email change's link, kept in memory only
let byRecovery = false;
let conditional = null;  // the AbortController of a passkey request offered in the address field

// ---- passkeys (signin_passkeys): the browser offers them in the address field's suggestions
// (conditional mediation) and behind the "Sign in with a passkey" button.
async function passkeySignIn(credential) {
  const answer = await call("passkeys/session", { credential: credentialJSON(credential), add: adding });
  if (!answered(answer)) msg.error(explain(answer));
}

async function startConditional() {
  if (!settings.passkeys || conditional || !PublicKeyCredential.isConditionalMediationAvailable) return;
  if (!(await PublicKeyCredential.isConditionalMediationAvailable())) return;
  $("email").setAttribute("autocomplete", "email webauthn");
  const options = await call("passkeys/login/options", {});
  if (options.status !== 200 || conditional) return;
  const mine = new AbortController();
  conditional = mine;
  let credential;
  try {
    credential = await navigator.credentials.get({
      publicKey: publicKeyOptions(options.body), mediation: "conditional", signal: mine.signal,
    });
  } catch (e) {
    return;  // aborted (the button, another step) or dismissed
  } finally {
    if (conditional === mine) conditional = null;
  }
  await passkeySignIn(credential);
}

// focus: the element to move the focus to; null leaves it where it is (a first page load).
function show(step, focus) {
  if (step !== "email" && conditional) {  // a passkey offered in the address field: only on that step
    conditional.abort();
    conditional = null;
  }
  for (const section of document.querySelectorAll("main > section")) section.hidden = section.id !== `step-${step}`;
  let title = {
    email: t("Sign in"),
    code: t("Check your email"),
    password: t("Sign in with a password"),
    link: t("Sign in"),
    choose: t("Choose an account"),
    mfa: t("Two-step sign-in"),
    confirm: t("Change of address"),
    done: t("You are signed in"),
  }[step];
  if (step === "email" && adding) title = t("Add an account");
  $("title").textContent = title;
  document.title = `${title} · ${document.title.split(" · ").slice(1).join(" · ")}`;
  if (focus !== null) (focus || $("title")).focus();
}

// A way in answered: 200 signed in, or 202 with the second factor to ask for.
function answered(answer) {
  if (answer.status === 202 && answer.body && answer.body.mfa_required) {
    msg.clear();
    mfaToken = answer.body.mfa_token;
    showMfa();
    return true;
  }
  if (answer.status === 200) {
    msg.notice(t("Signed in."));
    signedIn();
    return true;
  }
  return false;
}

function showMfa() {
  byRecovery = false;
  $("mfa-totp").hidden = false;
  $("mfa-recovery").hidden = true;
  $("mfa-code").value = "";
  $("mfa-recovery-code").value = "";
  $("mfa-switch").textContent = t("Use a recovery code instead");
  $("mfa-remember-label").hidden = settings.rememberDays <= 0;
  show("mfa", $("mfa-code"));
}

function signedIn() {
  try {
    localStorage.removeItem(kReturnKey);
  } catch (e) {
    // storage refused: nothing was kept
  }
  location.assign(returnTo || "account");
}

// The providers' links (GET providers): "Continue with ...", keeping return_to and add.
let providers = [];
async function loadProviders() {
  const answer = await call("providers");
  providers = answer.status === 200 && answer.body ? answer.body.providers : [];
  const box = $("providers");
  box.replaceChildren();
  for (const p of providers) {
    const query = new URLSearchParams();
    if (returnTo) query.set("return_to", returnTo);
    if (adding) query.set("add", "1");
    box.append(providerLink(p.name, query, t("Continue with {provider}", { provider: p.label })));
  }
}

function showEmail(focus = true) {
  $("email-form").hidden = !settings.email;  // signin_email off: providers and passkeys only
  $("providers").hidden = providers.length === 0;
  $("use-password").hidden = !settings.passwords;
  $("use-passkey").hidden = !settings.passkeys;
  startConditional();
  $("adding").hidden = !adding || !$("adding-address").textContent;
  show("email", focus && settings.email ? $("email") : null);
}

function showCode() {
  $("code-address").textContent = address;
  $("code-unknown-note").hidden = settings.registration;
  $("code").value = "";
  show("code", $("code"));
  startResendTimer();
}

// The browser's accounts, none active: a button each.
function showChooser(accounts) {
  const list = $("choose-list");
  list.replaceChildren();
  for (const a of accounts) {
    const item = document.createElement("li");
    const what = document.createElement("div");
    what.className = "what address";
    what.textContent = accountName(a.user);
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = t("Continue");
    button.setAttribute("aria-label", t("Continue as {account}", { account: accountName(a.user) }));
    button.addEventListener("click", () => busy(button, t("Signing in…"), async () => {
      const answer = await call("accounts/switch", { session_id: a.session_id });
      if (answer.status === 204) return signedIn();
      msg.error(explain(answer));
      return start();
    }));
    item.append(what, button);
    list.append(item);
  }
  show("choose");
}

function showDone(user) {
  $("done-address").textContent = accountName(user);
  $("continue").href = returnTo || "account";
  show("done");
}

function startResendTimer() {
  const button = $("resend");
  let left = settings.resendSeconds;
  clearInterval(resendTimer);
  const tick = () => {
    if (left <= 0) {
      clearInterval(resendTimer);
      button.disabled = false;
      button.textContent = t("Send a new code");
      return;
    }
    button.disabled = true;
    button.textContent = t("Send a new code (in {n, plural, one {# second} other {# seconds}})", { n: left });
    left -= 1;
  };
  tick();
  resendTimer = setInterval(tick, 1000);
}

// With registration on, /register signs new addresses up and sends existing accounts a sign-in
// code: nobody waits for an email that never comes. Without it, /login sends to accounts only.
async function askForCode(email) {
  if (returnTo || adding) {
    try {
      localStorage.setItem(kReturnKey, JSON.stringify({ path: returnTo, add: adding, at: Date.now() }));
    } catch (e) {
      // storage refused: a link opened elsewhere lands on the account page
    }
  }
  wrongCodes = 0;
  return call(settings.registration ? "register" : "login", { email });
}

$("email-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("email");
  const email = input.value.trim();
  if (!email || !input.checkValidity()) {
    msg.error(t("Enter an email address like name@example.com."), input);
    return;
  }
  await busy($("email-submit"), t("Sending…"), async () => {
    const answer = await askForCode(email);
    if (answer.status === 202) {
      msg.clear();
      address = email;
      showCode();
    } else {
      msg.error(explain(answer), input);
    }
  });
});

$("code-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("code");
  const code = input.value.trim();
  if (!code) {
    msg.error(t("Enter the code from the email."), input);
    return;
  }
  await busy($("code-submit"), t("Signing in…"), async () => {
    const answer = await call("session", { email: address, code, add: adding });
    if (answered(answer)) {
      return;
    } else if (answer.body && answer.body.code === "invalid_token" && ++wrongCodes >= 5) {
      msg.error(t("Too many wrong codes: the codes sent so far no longer work. Send a new code."));
      $("resend").focus();
    } else {
      msg.error(explain(answer, "code"), input);
    }
  });
});

$("resend").addEventListener("click", async () => {
  const answer = await askForCode(address);
  if (answer.status === 202) {
    msg.notice(t("We sent a new code to {address}. Use the newest one.", { address }));
    startResendTimer();
    $("code").value = "";  // the old code (perhaps the wrong one) must not be sent again by habit
    wrongCodes = 0;
    $("code").focus();
  } else {
    msg.error(explain(answer));
  }
});

$("change-address").addEventListener("click", () => {
  msg.clear();
  clearInterval(resendTimer);
  $("email").value = address;
  showEmail();
});

$("use-passkey").addEventListener("click", () => busy($("use-passkey"), t("Waiting for your passkey…"), async () => {
  if (conditional) {
    conditional.abort();
    conditional = null;
  }
  const options = await call("passkeys/login/options", {});
  if (options.status !== 200) return msg.error(explain(options));
  let credential;
  try {
    credential = await navigator.credentials.get({ publicKey: publicKeyOptions(options.body) });
  } catch (e) {
    return msg.error(passkeyTrouble(e));
  }
  return passkeySignIn(credential);
}));

$("use-password").addEventListener("click", () => {
  msg.clear();
  $("password-email").value = $("email").value.trim();
  show("password", $("password-email").value ? $("password") : $("password-email"));
});

$("use-code").addEventListener("click", () => {
  msg.clear();
  $("email").value = $("password-email").value.trim();
  showEmail();
});

$("password-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const emailInput = $("password-email");
  const passwordInput = $("password");
  const email = emailInput.value.trim();
  if (!email || !emailInput.checkValidity()) {
    msg.error(t("Enter an email address like name@example.com."), emailInput);
    return;
  }
  if (!passwordInput.value) {
    msg.error(t("Enter your password."), passwordInput);
    return;
  }
  await busy($("password-submit"), t("Signing in…"), async () => {
    const answer = await call("password/session", { email, password: passwordInput.value, add: adding });
    if (answered(answer)) {
      passwordInput.value = "";
    } else {
      passwordInput.value = "";
      msg.error(explain(answer), answer.body && answer.body.code === "invalid_credentials" ? passwordInput : null);
    }
  });
});

$("link-submit").addEventListener("click", async () => {
  await busy($("link-submit"), t("Signing in…"), async () => {
    const answer = await call("session", { token: linkToken, add: adding });
    linkToken = "";
    if (!answered(answer)) {
      showEmail(false);
      msg.error(explain(answer, "link"));
    }
  });
});

$("mfa-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = byRecovery ? $("mfa-recovery-code") : $("mfa-code");
  const value = input.value.trim();
  if (!value) {
    msg.error(byRecovery ? t("Enter one of your recovery codes.") : t("Enter the 6-digit code from your app."), input);
    return;
  }
  const body = { mfa_token: mfaToken, remember: $("mfa-remember").checked && settings.rememberDays > 0 };
  if (byRecovery) body.recovery_code = value;
  else body.code = value;
  await busy($("mfa-submit"), t("Checking…"), async () => {
    const answer = await call("mfa/verify", body);
    if (answered(answer)) {
      mfaToken = "";
      return;
    }
    const code = answer.body && answer.body.code;
    if (code === "invalid_code") {
      input.value = "";
      msg.error(byRecovery ? t("That recovery code is not right, or was used already.")
        : t("That code is not right. Wait for the next one and try again."), input);
    } else if (code === "invalid_token") {
      mfaToken = "";
      showEmail();
      msg.error(t("This sign-in took too long or had too many wrong codes. Start again."));
    } else {
      msg.error(explain(answer));
    }
  });
});

$("mfa-switch").addEventListener("click", () => {
  byRecovery = !byRecovery;
  msg.clear();
  $("mfa-totp").hidden = byRecovery;
  $("mfa-recovery").hidden = !byRecovery;
  $("mfa-switch").textContent = byRecovery ? t("Use your authenticator app instead") : t("Use a recovery code instead");
  (byRecovery ? $("mfa-recovery-code") : $("mfa-code")).focus();
});

$("mfa-restart").addEventListener("click", () => {
  mfaToken = "";
  msg.clear();
  showEmail();
});

$("confirm-submit").addEventListener("click", async () => {
  await busy($("confirm-submit"), t("Confirming…"), async () => {
    const answer = await call("email/confirm", { token: confirmToken });
    confirmToken = "";
    $("confirm-submit").hidden = true;
    if (answer.status === 200) {
      const b = answer.body;
      $("confirm-text").textContent = b.status === "changed"
        ? t("Done: your account's address is now {email}.", { email: b.email })
        : b.status === "confirmed"
          ? t("The new address is confirmed. The change is made once your current address approves it too: open the email sent there.")
          : t("Approved. The change is made once the new address is confirmed too: open the email sent there.");
      msg.notice(b.status === "changed" ? t("Your address is changed.") : t("Thank you."));
    } else if (answer.body && answer.body.code === "email_taken") {
      msg.error(t("The new address has an account of its own now, so the change was not made."));
    } else {
      msg.error(t("This link has expired or was already used. Ask for the change again on your account page."));
    }
  });
});

$("link-cancel").addEventListener("click", () => {
  linkToken = "";
  msg.clear();
  showEmail();
});

$("sign-out").addEventListener("click", async () => {
  const answer = await call("logout", {});
  if (answer.status === 204 || answer.status === 401) {
    await start();  // the browser's other accounts, if it has any
    msg.notice(t("You are signed out."));
  } else {
    msg.error(explain(answer));
  }
});

$("other-account").addEventListener("click", () => {
  adding = true;
  msg.clear();
  showEmail();
});

$("choose-other").addEventListener("click", () => {
  msg.clear();
  showEmail();
});

$("choose-forget").addEventListener("click", async () => {
  const answer = await call("logout", { all: true });
  if (answer.status === 204 || answer.status === 401) {
    showEmail();
    msg.notice(t("You are signed out of every account in this browser."));
  } else {
    msg.error(explain(answer));
  }
});

async function start() {
  // A link from an email: #token=... never reaches a server or a log. It is taken out of the
  // address bar and the history at once, and spent only when the button is pressed.
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get("confirm")) {  // an email change's link: confirmed only on a click, like a sign-in link
    confirmToken = fragment.get("confirm");
    history.replaceState(null, "", location.pathname + location.search);
    $("confirm-submit").hidden = false;
    show("confirm", $("confirm-submit"));
    return;
  }
  if (fragment.get("mfa")) {  // a provider's sign-in that needs the second factor (signin_providers.cpp)
    mfaToken = fragment.get("mfa");
    history.replaceState(null, "", location.pathname + location.search);
    return showMfa();
  }
  if (fragment.get("token")) {
    linkToken = fragment.get("token");
    history.replaceState(null, "", location.pathname + location.search);
    const saved = remembered();
    returnTo = returnTo || (saved && safeReturnTo(saved.path));
    adding = adding || !!(saved && saved.add);
    show("link", $("link-submit"));
    return;
  }
  // the account page's sign-out and deletion come here
  const signedOut = location.hash === "#signed-out" || location.hash === "#deleted";
  const deleted = location.hash === "#deleted";
  if (signedOut) history.replaceState(null, "", location.pathname + location.search);
  // a provider's sign-in that came back without one: say why, once
  const query = new URLSearchParams(location.search);
  const trouble = query.get("provider_error");
  if (trouble) {
    query.delete("provider_error");
    history.replaceState(null, "", location.pathname + (query.size ? `?${query}` : ""));
  }
  await loadProviders();
  const me = await call("me");
  if (me.status === 200 && me.body) {
    $("adding-address").textContent = accountName(me.body);
    if (adding) showEmail(false);
    else showDone(me.body);
    if (trouble) msg.error(providerTrouble(trouble));
    return;
  }
  adding = false;  // no account is signed in: nothing to add to
  const accounts = await call("accounts");
  const others = accounts.status === 200 && accounts.body ? accounts.body.accounts : [];
  if (others.length) {
    showChooser(others);
  } else {
    showEmail(false);
  }
  if (signedOut) msg.notice(deleted ? t("Your account is deleted.") : t("You are signed out."));
  if (trouble) msg.error(providerTrouble(trouble));
}

start();
