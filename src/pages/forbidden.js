// The 403 page of a gated location (signin_allow / signin_deny refused a signed-in browser):
// "Sign out and use another account" ends this session through the sign-in API at
// signin_login_url and goes to the sign-in page with return_to. Only when that page is on this
// site: a cross-site fetch would carry no cookie, and the plain link stays.
import { call, t } from "./common.js";

const body = document.body;
const login = new URL(body.dataset.loginUrl, location.href);
const returnTo = decodeURIComponent(body.dataset.returnTo);
const button = document.getElementById("sign-out");
const other = document.getElementById("switch");

if (login.origin === location.origin) {
  button.hidden = false;
  other.hidden = true;
  button.addEventListener("click", async () => {
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    const { status } = await call(new URL("logout", login).href, {});
    if (status === 204 || status === 401) {
      login.searchParams.set("return_to", returnTo);
      location.assign(login.href);
      return;
    }
    button.disabled = false;
    button.removeAttribute("aria-busy");
    document.getElementById("error").textContent = status === 0
      ? t("We could not reach the server. Check your connection and try again.")
      : t("Signing out did not work ({status}). Try again.", { status });
  });
}
