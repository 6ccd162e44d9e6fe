// The account page (signin_pages): who is signed in, the browser's other accounts (switch, add),
// their sessions (revoke), their password (set from a fresh session, change with the current
// one), sign out. Each capability is one <section> of account.html and one load*() here.
import {
  accountName, busy, call, credentialJSON, describe, explain, messages, passkeysAvailable, passkeyTrouble,
  providerLink, providerTrouble, publicKeyOptions, t, when,
} from "./common.js";

const $ = (id) => document.getElementById(id);
const passwords = document.body.dataset.passwords === "on";
const mfaOn = document.body.dataset.mfa === "on";
const passkeysOn = document.body.dataset.passkeys === "on";
const msg = messages();
let me = null;            // GET /me
let currentSession = "";  // the id of this browser's session

function toSignIn() {
  location.assign(`./?return_to=${encodeURIComponent(location.pathname)}`);
}

// One entry of a list (accounts, sessions, passkeys): its name (with a badge), a line of detail,
// and a button (label, its accessible name, what it does while it says `working`).
function listItem({ name, nameClass, nameTitle, badge, hint, button }) {
  const item = document.createElement("li");
  const what = document.createElement("div");
  what.className = "what";
  const title = document.createElement("div");
  if (nameClass) title.className = nameClass;
  if (nameTitle) title.title = nameTitle;
  title.textContent = name;
  if (badge) {
    const b = document.createElement("span");
    b.className = "badge";
    b.textContent = badge;
    title.append(b);
  }
  what.append(title);
  if (hint) {
    const small = document.createElement("div");
    small.className = "hint";
    small.textContent = hint;
    what.append(small);
  }
  item.append(what);
  if (button) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "secondary";
    b.textContent = button.label;
    b.setAttribute("aria-label", button.aria);
    b.addEventListener("click", () => busy(b, button.working, button.run));
    item.append(b);
  }
  return item;
}

// ---- the accounts of this browser (signin_browser_accounts): switch to one, sign all out
async function loadAccounts() {
  const answer = await call("accounts");
  if (answer.status !== 200) return msg.error(explain(answer));
  const list = $("accounts");
  list.replaceChildren();
  for (const a of answer.body.accounts) {
    list.append(listItem({
      name: accountName(a.user),
      nameClass: "address",
      badge: a.active ? t("Signed in") : "",
      button: a.active ? null : {
        label: t("Switch"),
        aria: t("Switch to {account}", { account: accountName(a.user) }),
        working: t("Switching…"),
        run: async () => {
          const switched = await call("accounts/switch", { session_id: a.session_id });
          if (switched.status === 204) return location.reload();
          msg.error(explain(switched));
          return loadAccounts();
        },
      },
    }));
  }
  $("sign-out-all").hidden = answer.body.accounts.length < 2;
}

async function loadSessions() {
  const answer = await call("sessions");
  if (answer.status === 401) return toSignIn();
  if (answer.status !== 200) return msg.error(explain(answer));
  const list = $("sessions");
  list.replaceChildren();
  let fresh = false;
  for (const s of answer.body.sessions) {
    if (s.current) {
      fresh = !!s.fresh;
      currentSession = s.id;
    }
    const { agent, detail } = describe(s);
    list.append(listItem({
      name: agent,
      nameTitle: s.user_agent,
      badge: s.current ? t("This browser") : "",
      hint: detail,
      button: s.current ? null : {
        label: t("Sign out"),
        aria: detail ? t("Sign out {session}, {detail}", { session: agent, detail }) : t("Sign out {session}", { session: agent }),
        working: t("Signing out…"),
        run: () => revoke(s.id),
      },
    }));
  }
  $("password-section").hidden = !passwords;
  $("set-password-form").hidden = !fresh;
  $("change-password-form").hidden = fresh;
  $("confirm-section").hidden = fresh || !(passwords || mfaOn || passkeysOn);
  $("reauth-form").hidden = true;
}

// ---- OpenID Connect providers (signin_provider): the linked ones (unlink), a link to link another
async function loadProviders() {
  const configured = await call("providers");
  const all = configured.status === 200 && configured.body ? configured.body.providers : [];
  if (all.length === 0) return;
  const linked = await call("providers/linked");
  if (linked.status !== 200 || !linked.body) return;
  $("providers-section").hidden = false;
  const label = (name) => (all.find((p) => p.name === name) || { label: name }).label;
  const list = $("provider-links");
  list.replaceChildren();
  for (const l of linked.body.providers) {
    list.append(listItem({
      name: label(l.provider),
      hint: t("{email} · linked {when}", { email: l.email || t("no email address"), when: when(l.created_at) }),
      button: {
        label: t("Unlink"),
        aria: t("Unlink {provider} ({email})", { provider: label(l.provider), email: l.email || t("no email address") }),
        working: t("Unlinking…"),
        run: async () => {
          const answer = await call("providers/unlink", { id: l.id });
          if (answer.status === 409) {
            return msg.error(t("This is how you sign in here: add a passkey, a password or an email address first."));
          }
          if (answer.status !== 204) return msg.error(explain(answer));
          await loadProviders();
          msg.notice(t("{provider} is unlinked.", { provider: label(l.provider) }));
          return $("providers-title").focus();
        },
      },
    }));
  }
  const add = $("provider-add");
  add.replaceChildren();
  for (const p of all) add.append(providerLink(p.name, new URLSearchParams({ link: "1" }), t("Link {provider}", { provider: p.label })));
}

// ---- passkeys (signin_passkeys)
async function loadPasskeys() {
  if (!passkeysOn) return;
  const answer = await call("passkeys");
  if (answer.status !== 200) return msg.error(explain(answer));
  $("passkeys-section").hidden = false;
  $("passkey-form").hidden = !passkeysAvailable();
  const list = $("passkeys");
  list.replaceChildren();
  for (const p of answer.body.passkeys) {
    list.append(listItem({
      name: p.name,
      hint: p.last_used_at ? t("Added {added}; last used {used}", { added: when(p.created_at), used: when(p.last_used_at) })
        : t("Added {added}; not used yet", { added: when(p.created_at) }),
      button: {
        label: t("Remove"),
        aria: t("Remove passkey {name}", { name: p.name }),
        working: t("Removing…"),
        run: async () => {
          const removed = await call("passkeys/remove", { id: p.id });
          if (removed.status !== 204) return msg.error(explain(removed));
          await loadPasskeys();
          msg.notice(t("The passkey {name} is removed.", { name: p.name }));
          return $("passkeys-title").focus();
        },
      },
    }));
  }
}

$("passkey-form").addEventListener("submit", (event) => {
  event.preventDefault();
  return busy($("passkey-add"), t("Waiting for your device…"), async () => {
    const options = await call("passkeys/register/options", {});
    if (options.status !== 200) {
      if (!needsFresh(options)) msg.error(explain(options));
      return;
    }
    let credential;
    try {
      credential = await navigator.credentials.create({ publicKey: publicKeyOptions(options.body) });
    } catch (e) {
      return msg.error(passkeyTrouble(e));
    }
    const name = $("passkey-name").value.trim();
    const answer = await call("passkeys/register", { credential: credentialJSON(credential), ...(name ? { name } : {}) });
    if (answer.status !== 201) {
      if (!needsFresh(answer)) msg.error(explain(answer));
      return;
    }
    $("passkey-form").reset();
    await loadPasskeys();
    msg.notice(t("Passkey added: {name}. Use it to sign in next time.", { name: answer.body.name }));
    $("passkeys-title").focus();
  });
});

// ---- two-step sign-in (signin_mfa)
function showCodes(codes) {
  const list = $("mfa-code-list");
  list.replaceChildren();
  for (const c of codes) {
    const item = document.createElement("li");
    item.textContent = c;
    list.append(item);
  }
  $("mfa-codes").hidden = false;
  $("mfa-state").hidden = true;  // the notice above says it is on; the state line comes back with "I have saved them"
  $("mfa-on").hidden = true;
  $("mfa-off").hidden = true;
  $("mfa-enroll").hidden = true;
  $("mfa-title").focus();
}

async function loadMfa() {
  if (!mfaOn) return;
  const answer = await call("mfa");
  if (answer.status !== 200) return msg.error(explain(answer));
  const s = answer.body;
  $("mfa-section").hidden = false;
  $("mfa-codes").hidden = true;
  $("mfa-state").hidden = false;
  $("mfa-enroll").hidden = true;
  $("mfa-on").hidden = !s.totp;
  $("mfa-off").hidden = s.totp;
  $("mfa-state").textContent = s.totp
    ? t("On: an authenticator app. {left, plural, one {# of 10 recovery codes left} other {# of 10 recovery codes left}}; {browsers, plural, one {# remembered browser} other {# remembered browsers}}.",
      { left: s.recovery_codes_left, browsers: s.remembered_devices })
    : t("Off.");
}

// A change that needs a fresh session: says so and shows how to confirm.
function needsFresh(answer) {
  if (!(answer.body && answer.body.code === "fresh_session_required")) return false;
  $("confirm-section").hidden = false;
  msg.error(t("For your safety, confirm it is you with a code by email first (below)."));
  $("confirm-title").focus();
  return true;
}

$("mfa-setup").addEventListener("click", async () => {
  await busy($("mfa-setup"), t("Preparing…"), async () => {
    const answer = await call("mfa/totp/setup", {});
    if (answer.status !== 200) {
      if (!needsFresh(answer)) msg.error(explain(answer));
      return;
    }
    msg.clear();
    $("mfa-qr").src = `data:image/svg+xml;base64,${btoa(answer.body.qr_svg)}`;
    $("mfa-secret").textContent = answer.body.secret;
    $("mfa-off").hidden = true;
    $("mfa-enroll").hidden = false;
    $("mfa-confirm-code").focus();
  });
});

$("mfa-enroll").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("mfa-confirm-code");
  if (!input.value.trim()) return msg.error(t("Enter the 6-digit code your app shows."), input);
  await busy($("mfa-confirm-submit"), t("Checking…"), async () => {
    const answer = await call("mfa/totp/confirm", { code: input.value.trim() });
    input.value = "";
    if (answer.status !== 200) {
      msg.error(answer.body && answer.body.code === "invalid_code"
        ? t("That code is not right. Check the time on your phone, and try the next code.") : explain(answer), input);
      return;
    }
    $("mfa-secret").textContent = "";
    $("mfa-qr").removeAttribute("src");
    await loadSessions();
    msg.notice(t("Two-step sign-in is on. Other sessions were signed out."));
    showCodes(answer.body.recovery_codes);
  });
});

$("mfa-codes-done").addEventListener("click", async () => {
  $("mfa-code-list").replaceChildren();
  await loadMfa();
  $("mfa-title").focus();
});

$("mfa-new-codes").addEventListener("click", async () => {
  const answer = await call("mfa/recovery-codes", {});
  if (answer.status === 200) {
    msg.notice(t("New recovery codes: the old ones no longer work."));
    showCodes(answer.body.recovery_codes);
  } else if (!needsFresh(answer)) {
    msg.error(explain(answer));
  }
});

$("mfa-forget").addEventListener("click", async () => {
  const answer = await call("mfa/devices/forget", {});
  if (answer.status === 204) {
    await loadMfa();
    msg.notice(t("No browser is remembered now: each asks for the second step again."));
  } else {
    msg.error(explain(answer));
  }
});

$("mfa-disable").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("mfa-disable-code");
  const value = input.value.trim();
  if (!value) return msg.error(t("Enter a code from your app, or a recovery code."), input);
  const body = /^[0-9 ]+$/.test(value) ? { code: value } : { recovery_code: value };
  await busy($("mfa-disable-submit"), t("Turning off…"), async () => {
    const answer = await call("mfa/disable", body);
    input.value = "";
    if (answer.status === 204) {
      await loadSessions();
      await loadMfa();
      msg.notice(t("Two-step sign-in is off. Other sessions were signed out."));
    } else if (!needsFresh(answer)) {
      msg.error(answer.body && answer.body.code === "invalid_code" ? t("That code is not right.") : explain(answer), input);
    }
  });
});

function withGroup(body) {
  if (me && me.group_id) body.group = me.group_id;
  return body;
}

// No password, or a forgotten one: a code by email makes this browser's session fresh (a new
// session replaces this one, which is then ended), and the set-password form appears.
$("reauth-send").addEventListener("click", async () => {
  await busy($("reauth-send"), t("Sending…"), async () => {
    const answer = await call("login", withGroup({ email: me.email }));
    if (answer.status === 202) {
      msg.notice(t("We sent a code to {email}.", { email: me.email }));
      $("reauth-form").hidden = false;
      $("reauth-code").focus();
    } else {
      msg.error(explain(answer));
    }
  });
});

$("reauth-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("reauth-code");
  if (!input.value.trim()) return msg.error(t("Enter the code from the email."), input);
  await busy($("reauth-submit"), t("Confirming…"), async () => {
    const previous = currentSession;
    const answer = await call("session", withGroup({ email: me.email, code: input.value.trim() }));
    if (answer.status !== 200) return msg.error(explain(answer, "code"), input);
    input.value = "";
    if (previous) await call("sessions/revoke", { id: previous });
    await loadSessions();
    await loadMfa();
    msg.notice(passwords ? t("Confirmed. You can set a new password, or change two-step sign-in, now.")
      : t("Confirmed. You can change two-step sign-in now."));
    (passwords ? $("new-password") : $("mfa-title")).focus();
  });
});

async function revoke(id) {
  const answer = await call("sessions/revoke", { id });
  if (answer.status === 204) {
    await loadSessions();
    msg.notice(t("That session is signed out."));
    $("sessions-title").focus();
  } else if (answer.status === 401) {
    toSignIn();
  } else {
    msg.error(explain(answer));
  }
}

$("set-password-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("new-password");
  if (!input.value) return msg.error(t("Enter a new password."), input);
  await busy($("set-password-submit"), t("Saving…"), async () => {
    const answer = await call("password", { password: input.value });
    input.value = "";
    if (answer.status === 204) {
      await loadSessions();
      msg.notice(t("Your password is set. Other sessions were signed out."));
    } else {
      msg.error(explain(answer), answer.body && answer.body.code === "weak_password" ? input : null);
    }
  });
});

$("change-password-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const current = $("current-password");
  const next = $("changed-password");
  if (!current.value) return msg.error(t("Enter your current password."), current);
  if (!next.value) return msg.error(t("Enter a new password."), next);
  await busy($("change-password-submit"), t("Saving…"), async () => {
    const answer = await call("password/change", { current: current.value, password: next.value });
    current.value = "";
    next.value = "";
    if (answer.status === 204) {
      await loadSessions();
      msg.notice(t("Your password is changed. Other sessions were signed out."));
    } else {
      const code = answer.body && answer.body.code;
      msg.error(explain(answer), code === "wrong_password" ? current : code === "weak_password" ? next : null);
    }
  });
});

// ---- email change: the new address confirms, the current one approves
let changeTo = "";
$("change-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("new-address");
  const email = input.value.trim();
  if (!email || !input.checkValidity()) return msg.error(t("Enter an email address like name@example.com."), input);
  await busy($("change-submit"), t("Sending…"), async () => {
    const answer = await call("email/change", { email });
    if (answer.status !== 202) return msg.error(explain(answer), input);
    changeTo = email;
    $("change-new-code").disabled = false;
    $("change-old-code").disabled = false;
    msg.notice(t("Two emails are on their way."));
    $("change-new").textContent = email;
    $("change-sent").hidden = false;
    $("change-new-code").focus();
  });
});

$("change-new-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const halves = [
    { input: $("change-new-code"), email: changeTo },
    { input: $("change-old-code"), email: me.email },
  ].filter((h) => h.input.value.trim());
  if (!halves.length) return msg.error(t("Enter a code from one of the two emails."), $("change-new-code"));
  await busy($("change-confirm-submit"), t("Confirming…"), async () => {
    for (const h of halves) {
      const answer = await call("email/confirm", withGroup({ email: h.email, code: h.input.value.trim() }));
      if (answer.status !== 200) {
        return msg.error(answer.body && answer.body.code === "email_taken"
          ? t("The new address has an account of its own now, so the change was not made.")
          : explain(answer, "code"), h.input);
      }
      h.input.value = "";
      h.input.disabled = true;
      if (answer.body.status === "changed") {
        me.email = answer.body.email;
        $("me-address").textContent = me.email;
        $("change-sent").hidden = true;
        $("change-form").reset();
        await loadSessions();
        msg.notice(t("Your address is now {email}. Other sessions were signed out.", { email: me.email }));
        $("address-title").focus();
        return;
      }
    }
    msg.notice(t("Confirmed. Now the code (or link) of the other email."));
  });
});

$("delete-start").addEventListener("click", () => {
  $("delete-address").textContent = me.email;
  $("delete-start").hidden = true;
  $("delete-confirm").hidden = false;
  $("delete-no").focus();
});

$("delete-no").addEventListener("click", () => {
  $("delete-confirm").hidden = true;
  $("delete-start").hidden = false;
  $("delete-start").focus();
});

$("delete-yes").addEventListener("click", async () => {
  await busy($("delete-yes"), t("Deleting…"), async () => {
    const answer = await call("account/delete", {});
    if (answer.status === 204) {
      location.assign("./#deleted");
    } else if (!needsFresh(answer)) {
      msg.error(explain(answer));
    }
  });
});

for (const [id, body] of [["sign-out", {}], ["sign-out-all", { all: true }]]) {
  $(id).addEventListener("click", async () => {
    await busy($(id), t("Signing out…"), async () => {
      const answer = await call("logout", body);
      if (answer.status === 204 || answer.status === 401) {
        location.assign("./#signed-out");
      } else {
        msg.error(explain(answer));
      }
    });
  });
}

async function start() {
  const answer = await call("me");
  if (answer.status === 401) return toSignIn();
  if (answer.status !== 200 || !answer.body) return msg.error(explain(answer));
  me = answer.body;
  $("me-address").textContent = accountName(me);
  $("account").hidden = false;
  await loadAccounts();
  await loadSessions();
  await loadPasskeys();
  await loadProviders();
  await loadMfa();
  // back from linking a provider (signin_providers.cpp): say how it went, once
  const query = new URLSearchParams(location.search);
  const linkedNow = query.get("provider_linked"), trouble = query.get("provider_error");
  if (linkedNow || trouble) {
    history.replaceState(null, "", location.pathname);
    if (trouble) msg.error(providerTrouble(trouble));
    else msg.notice(t("The provider is linked: you can sign in with it."));
  }
}

start();
