// Shared by the pages of ngx_signin (signin_pages): calls to the sign-in API (relative to the
// page, which is served at {auth_path}/ and {auth_path}/account) and the words shown for its
// answers. No framework, no third-party code: the pages run under a CSP with script-src 'self'.

// The API's answer: {status, body} (body null when not JSON). A network failure is status 0.
export async function call(path, body) {
  const init = body === undefined
    ? { method: "GET", headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store" }
    : {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        credentials: "same-origin",
        body: JSON.stringify(body),
      };
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    return { status: 0, body: null };
  }
  let json = null;
  try {
    json = await res.json();
  } catch (e) {
    json = null;
  }
  return { status: res.status, body: json };
}

// "in 11 minutes", never seconds past a minute.
export function inTime(seconds) {
  const s = Math.max(1, Math.ceil(Number(seconds) || 1));
  if (s < 60) return s === 1 ? "in 1 second" : `in ${s} seconds`;
  const m = Math.ceil(s / 60);
  if (m < 60) return m === 1 ? "in 1 minute" : `in ${m} minutes`;
  const h = Math.ceil(m / 60);
  return h === 1 ? "in 1 hour" : `in ${h} hours`;
}

// What a person is told for an API answer that is not a success. The API's own messages are for
// developers; these are for visitors and say "code", never "token".
export function explain(answer, context) {
  const code = answer.body && answer.body.code;
  if (answer.status === 0) return "We could not reach the server. Check your connection and try again.";
  switch (code) {
    case "invalid_token":
      return context === "link"
        ? "This link has expired or was already used. Ask for a new code."
        : "That code is not right, or it has expired. Check it, or ask for a new one.";
    case "invalid_email":
      return "Enter an email address like name@example.com.";
    case "invalid_credentials":
      return "The email address or the password is not right.";
    case "rate_limited":
      return `Too many attempts. Try again ${inTime(answer.body.retry_after)}.`;
    case "suspended":
      return "This account is suspended.";
    case "forbidden":
      return "This account may not sign in here.";
    case "registration_disabled":
      return "New accounts cannot be created here.";
    case "passwords_disabled":
      return "Passwords are not used on this site. Ask for a code instead.";
    case "weak_password":
      return answer.body.error ? `Choose another password: ${answer.body.error}.` : "Choose a longer, less common password.";
    case "wrong_password":
      return "Your current password is not right.";
    case "no_password":
      return "Your account has no password yet.";
    case "passkey_refused":
      return "This passkey was not accepted. Try again, or sign in another way.";
    case "passkeys_disabled":
      return "Passkeys are not used on this site.";
    case "fresh_session_required":
      return "For your safety, sign in again with an email code first.";
    case "origin_mismatch":
      return "This page is not at the site's configured address (signin_origin), so the server refused it.";
    case "unauthenticated":
      return "You are signed out. Sign in again.";
    case "busy":
      return "The server is busy. Try again in a moment.";
    case "storage_full":
    case "storage_unavailable":
    case "internal":
      return "Sign-in is unavailable right now. Try again in a moment.";
    default:
      return `Something went wrong (${answer.status}). Try again.`;
  }
}

// What a person is told when a sign-in with a provider came back without one (the callback's
// ?provider_error=CODE, signin_providers.cpp).
export function providerTrouble(code) {
  switch (code) {
    case "cancelled":
      return "Signing in was cancelled at the provider.";
    case "expired":
      return "That sign-in expired or was started in another browser. Try again.";
    case "account_exists":
      return "An account with this email address already exists. Sign in to it another way, then link the " +
        "provider on your account page.";
    case "no_account":
      return "There is no account for you here.";
    case "suspended":
      return "This account is suspended.";
    case "signed_out":
      return "Sign in first to link a provider.";
    case "provider_error":
      return "The provider could not sign you in just now. Try again in a moment.";
    default:
      return "Signing in with the provider did not work. Try again, or sign in another way.";
  }
}

// A provider's way in (signin_provider): a link to {auth_path}/providers/NAME/start with `query`
// (a URLSearchParams), reading `text`.
export function providerLink(name, query, text) {
  const a = document.createElement("a");
  a.className = "button secondary";
  a.href = `providers/${encodeURIComponent(name)}/start${query.size ? `?${query}` : ""}`;
  a.textContent = text;
  return a;
}

// How an account is named on the pages: its address, or what it is without one (an account a
// provider made without an address).
export function accountName(user) {
  return (user && user.email) || "Account without an email address";
}

// A return_to the pages follow: a path of this site only (`/x`, never `//host`, `/\host`, a
// scheme, a space or a control character), as signin::is_same_origin_path in the core.
export function safeReturnTo(value) {
  if (typeof value !== "string" || value.length === 0 || value.length > 2048) return null;
  if (value[0] !== "/" || value[1] === "/" || value[1] === "\\") return null;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f || value[i] === "\\") return null;
  }
  try {
    if (new URL(value, location.href).origin !== location.origin) return null;
  } catch (e) {
    return null;
  }
  return value;
}

// A button that shows it is working, and cannot be pressed twice.
export async function busy(button, label, work) {
  const before = button.textContent;
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  if (label) button.textContent = label;
  try {
    return await work();
  } finally {
    button.disabled = false;
    button.removeAttribute("aria-busy");
    button.textContent = before;
  }
}

// The page's message areas: one error (role=alert) and one notice (role=status).
export function messages() {
  const error = document.getElementById("error");
  const notice = document.getElementById("notice");
  return {
    error(text, field) {
      notice.textContent = "";
      error.textContent = text;
      for (const el of document.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
      if (field) {
        field.setAttribute("aria-invalid", "true");
        field.focus();
      }
    },
    notice(text) {
      error.textContent = "";
      notice.textContent = text;
    },
    clear() {
      error.textContent = "";
      notice.textContent = "";
      for (const el of document.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
    },
  };
}

// ---- passkeys (signin_passkeys): WebAuthn's JSON forms to and from what the browser takes
export const passkeysAvailable = () => typeof window.PublicKeyCredential === "function" && !!navigator.credentials;

function fromB64url(text) {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(text.length / 4) * 4, "=");
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)).buffer;
}
function toB64url(buffer) {
  let s = "";
  for (const b of new Uint8Array(buffer)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
// The server's creation or request options (JSON) as navigator.credentials takes them.
export function publicKeyOptions(json) {
  const o = { ...json, challenge: fromB64url(json.challenge) };
  if (json.user) o.user = { ...json.user, id: fromB64url(json.user.id) };
  for (const list of ["excludeCredentials", "allowCredentials"]) {
    if (json[list]) o[list] = json[list].map((c) => ({ ...c, id: fromB64url(c.id) }));
  }
  return o;
}
// A PublicKeyCredential in the JSON form the server reads.
export function credentialJSON(c) {
  const r = c.response;
  const response = { clientDataJSON: toB64url(r.clientDataJSON) };
  for (const k of ["attestationObject", "authenticatorData", "signature", "userHandle"]) {
    if (r[k]) response[k] = toB64url(r[k]);
  }
  return { id: c.id, rawId: toB64url(c.rawId), type: c.type, response };
}
// What a person is told when the browser's passkey dialog ends without a passkey.
export function passkeyTrouble(e) {
  if (e && e.name === "NotAllowedError") return "No passkey was used. Try again, or sign in another way.";
  if (e && e.name === "InvalidStateError") return "This device already holds a passkey for your account.";
  if (e && e.name === "SecurityError") return "Passkeys do not work at this address (the site needs a name, not a number).";
  return "Passkeys are not available in this browser. Sign in another way.";
}
