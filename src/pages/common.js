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

// ---- the page's language (signin_languages): its catalog ({"English text": "translation"}) is
// set by the language's i18n-TAG.js, which the page loads before this script; a string it lacks,
// or a page without a catalog (English), is shown in English.
const lang = document.documentElement.lang || "en";
const catalog =
  globalThis.signinCatalog !== null && typeof globalThis.signinCatalog === "object" ? globalThis.signinCatalog : {};

// The text of a {...} block that starts at text[start] ("{"), and where it ends.
function block(text, start) {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    if (text[i] === "{") depth++;
    else if (text[i] === "}" && --depth === 0) return { inner: text.slice(start + 1, i), end: i + 1 };
  }
  return { inner: text.slice(start + 1), end: text.length };
}

// An ICU message as the server's catalog holds it: {name}, and {name, plural, =N {...} one {...}
// other {...}} with # for the number, chosen by the language's plural rules (Intl.PluralRules).
function format(pattern, args, number) {
  let out = "";
  for (let i = 0; i < pattern.length;) {
    const c = pattern[i];
    if (c === "#" && number !== undefined) {
      out += new Intl.NumberFormat(lang).format(number);
      i++;
      continue;
    }
    if (c !== "{") {
      out += c;
      i++;
      continue;
    }
    const { inner, end } = block(pattern, i);
    i = end;
    const comma = inner.indexOf(",");
    const name = (comma < 0 ? inner : inner.slice(0, comma)).trim();
    const value = args ? args[name] : undefined;
    if (comma < 0) {
      out += value === undefined ? `{${name}}` : String(value);
      continue;
    }
    const rest = inner.slice(comma + 1);
    const kind = rest.slice(0, rest.indexOf(",")).trim();
    const options = {};
    let body = rest.slice(rest.indexOf(",") + 1);
    for (let j = 0; j < body.length;) {
      const open = body.indexOf("{", j);
      if (open < 0) break;
      const key = body.slice(j, open).trim();
      const b = block(body, open);
      options[key] = b.inner;
      j = b.end;
    }
    const n = Number(value);
    if (kind === "plural") {
      const chosen = options[`=${n}`] ?? options[new Intl.PluralRules(lang).select(n)] ?? options.other ?? "";
      out += format(chosen, args, n);
    } else {
      out += format(options[value] ?? options.other ?? "", args, number);
    }
  }
  return out;
}

// The page's text for an English message (the catalog's msgid), with its arguments.
export function t(english, args) {
  return format(catalog[english] || english, args);
}

// A date and time as the page's language writes them.
export function when(time) {
  const date = new Date(time);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleString(lang, { dateStyle: "medium", timeStyle: "short" });
}

// "Chrome on Linux" from a User-Agent; the whole string stays in the title (a tooltip).
export function browserName(ua) {
  const browser = /Edg\//.test(ua) ? "Edge" : /Firefox\//.test(ua) ? "Firefox" : /Chrom(e|ium)\//.test(ua) ? "Chrome"
    : /Safari\//.test(ua) ? "Safari" : /curl\//i.test(ua) ? "curl" : "";
  const os = /Android/.test(ua) ? "Android" : /iPhone|iPad/.test(ua) ? "iOS" : /Windows/.test(ua) ? "Windows"
    : /Mac OS X|Macintosh/.test(ua) ? "macOS" : /Linux/.test(ua) ? "Linux" : "";
  if (browser && os) return t("{browser} on {system}", { browser, system: os });
  return browser || os || ua.slice(0, 60);
}

// A session as a list shows it: what it is, and where and when it was last seen.
export function describe(s) {
  const agent = s.user_agent ? browserName(s.user_agent) : s.kind === "bearer" ? t("An app") : t("A browser");
  const last = s.last_seen_at ? when(s.last_seen_at) : "";
  const detail = s.client && last ? t("from {client}, last active {when}", { client: s.client, when: last })
    : s.client ? t("from {client}", { client: s.client })
      : last ? t("last active {when}", { when: last }) : "";
  return { agent, detail };
}

// The language picker (more than one signin_languages): the choice is the svc_lang cookie, for a
// year, on the whole site, and the page is loaded again in that language.
const picker = document.getElementById("signin-language");
if (picker) {
  picker.addEventListener("change", () => {
    const secure = location.protocol === "https:" ? "; Secure" : "";
    document.cookie = `svc_lang=${encodeURIComponent(picker.value)}; Path=/; Max-Age=31536000; SameSite=Lax${secure}`;
    location.reload();
  });
}

// "Try again in 11 minutes.", never seconds past a minute.
export function retryIn(seconds) {
  const s = Math.max(1, Math.ceil(Number(seconds) || 1));
  if (s < 60) return t("Too many attempts. Try again in {n, plural, one {# second} other {# seconds}}.", { n: s });
  const m = Math.ceil(s / 60);
  if (m < 60) return t("Too many attempts. Try again in {n, plural, one {# minute} other {# minutes}}.", { n: m });
  return t("Too many attempts. Try again in {n, plural, one {# hour} other {# hours}}.", { n: Math.ceil(m / 60) });
}

// What a person is told for an API answer that is not a success. The API's own messages are for
// developers; these are for visitors and say "code", never "token".
export function explain(answer, context) {
  const code = answer.body && answer.body.code;
  if (answer.status === 0) return t("We could not reach the server. Check your connection and try again.");
  switch (code) {
    case "invalid_token":
      return context === "link"
        ? t("This link has expired or was already used. Ask for a new code.")
        : t("That code is not right, or it has expired. Check it, or ask for a new one.");
    case "invalid_email":
      return t("Enter an email address like name@example.com.");
    case "invalid_credentials":
      return t("The email address or the password is not right.");
    case "rate_limited":
      return retryIn(answer.body.retry_after);
    case "suspended":
      return t("This account is suspended.");
    case "forbidden":
      return t("This account may not sign in here.");
    case "registration_disabled":
      return t("New accounts cannot be created here.");
    case "passwords_disabled":
      return t("Passwords are not used on this site. Ask for a code instead.");
    case "weak_password":
      return answer.body.error ? t("Choose another password: {reason}.", { reason: answer.body.error })
        : t("Choose a longer, less common password.");
    case "wrong_password":
      return t("Your current password is not right.");
    case "no_password":
      return t("Your account has no password yet.");
    case "passkey_refused":
      return t("This passkey was not accepted. Try again, or sign in another way.");
    case "passkeys_disabled":
      return t("Passkeys are not used on this site.");
    case "fresh_session_required":
      return t("For your safety, sign in again with an email code first.");
    case "origin_mismatch":
      return t("This page is not at the site's configured address (signin_origin), so the server refused it.");
    case "unauthenticated":
      return t("You are signed out. Sign in again.");
    case "busy":
      return t("The server is busy. Try again in a moment.");
    case "storage_full":
    case "storage_unavailable":
    case "internal":
      return t("Sign-in is unavailable right now. Try again in a moment.");
    default:
      return t("Something went wrong ({status}). Try again.", { status: answer.status });
  }
}

// What a person is told when a sign-in with a provider came back without one (the callback's
// ?provider_error=CODE, signin_providers.cpp).
export function providerTrouble(code) {
  switch (code) {
    case "cancelled":
      return t("Signing in was cancelled at the provider.");
    case "expired":
      return t("That sign-in expired or was started in another browser. Try again.");
    case "account_exists":
      return t("An account with this email address already exists. Sign in to it another way, then link the provider on your account page.");
    case "no_account":
      return t("There is no account for you here.");
    case "suspended":
      return t("This account is suspended.");
    case "signed_out":
      return t("Sign in first to link a provider.");
    case "provider_error":
      return t("The provider could not sign you in just now. Try again in a moment.");
    default:
      return t("Signing in with the provider did not work. Try again, or sign in another way.");
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
  return (user && user.email) || t("Account without an email address");
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
      for (const el of document.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
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
  if (e && e.name === "NotAllowedError") return t("No passkey was used. Try again, or sign in another way.");
  if (e && e.name === "InvalidStateError") return t("This device already holds a passkey for your account.");
  if (e && e.name === "SecurityError") return t("Passkeys do not work at this address (the site needs a name, not a number).");
  return t("Passkeys are not available in this browser. Sign in another way.");
}
