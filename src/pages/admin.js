// The administrators' pages (signin_admin): the people who sign in, one person with the changes an
// administrator may make, and the audit trail. Everything comes from the JSON API under
// admin/api/, which decides who may read and who may change: this page only shows its answers,
// so it holds nothing the API would not give. The view is in the URL's fragment (#user=ID,
// #audit), so the back button and a bookmark work without any other route on the server.
import { call, t, when, explain } from "./common.js";

const $ = (id) => document.getElementById(id);
const views = ["users-view", "person-view", "audit-view"];
let cursor = null;   // the `next` of the last page of the list
let person = null;   // the user shown on the person view

function show(view) {
  for (const v of views) $(v).hidden = v !== view;
}

function clearMessages() {
  $("error").textContent = "";
  $("notice").textContent = "";
  $("fresh-needed").hidden = true;
}

// A refusal as the visitor reads it; a change without a fresh second factor gets the link to pass it.
function trouble(answer) {
  const code = answer.body && answer.body.code;
  if (code === "fresh_session_required") {
    $("fresh-needed").hidden = false;
    return;
  }
  if (answer.status === 401) {
    location.assign("../?return_to=" + encodeURIComponent(location.pathname + location.hash));
    return;
  }
  if (answer.status === 403 && code === "forbidden") {
    $("error").textContent = t("This account may not open the administration pages.");
    return;
  }
  $("error").textContent = explain(answer);
}

function stateOf(user) {
  if (user.suspended) return t("Suspended");
  return user.state === "pending" ? t("Pending") : t("Active");
}

// ---- the list
function userRow(user) {
  const tr = document.createElement("tr");
  const cells = [user.email, stateOf(user), (user.roles || []).join(", "), when(user.created_at)];
  const labels = [t("Address"), t("State"), t("Roles"), t("Created")];
  cells.forEach((text, i) => {
    const td = document.createElement("td");
    td.dataset.label = labels[i];
    if (i === 0) {
      const a = document.createElement("a");
      a.href = "#user=" + encodeURIComponent(user.id);
      a.textContent = text;
      td.append(a);
    } else {
      td.textContent = text;
    }
    tr.append(td);
  });
  return tr;
}

async function loadUsers(more) {
  const params = new URLSearchParams();
  for (const name of ["q", "state", "role"]) {
    const value = $(name).value.trim();
    if (value) params.set(name, value);
  }
  if (more && cursor) params.set("after", cursor);
  const answer = await call("api/users?" + params.toString());
  if (answer.status !== 200) return trouble(answer);
  if (!more) $("users").replaceChildren();
  for (const user of answer.body.users) $("users").append(userRow(user));
  cursor = answer.body.next;
  $("more").hidden = !cursor;
  $("no-users").hidden = $("users").children.length > 0;
  $("users-view").hidden = false;
}

// ---- one person
function fact(name, value) {
  const dt = document.createElement("dt");
  dt.textContent = name;
  const dd = document.createElement("dd");
  dd.textContent = value;
  $("facts").append(dt, dd);
}

function auditItem(entry) {
  const li = document.createElement("li");
  li.textContent = [when(entry.at), entry.kind, entry.email, entry.client].filter(Boolean).join(" · ");
  return li;
}

async function loadPerson(id) {
  const answer = await call("api/users/" + encodeURIComponent(id));
  if (answer.status !== 200) return trouble(answer);
  const p = answer.body;
  person = p.user;
  show("person-view");
  $("person-title").textContent = person.email;
  $("facts").replaceChildren();
  fact(t("State"), stateOf(person));
  fact(t("Roles"), (person.roles || []).join(", ") || "—");
  fact(t("Created"), when(person.created_at));
  fact(t("Sessions"), String((p.sessions || []).length));
  fact(t("Passkeys"), String((p.passkeys || []).length));
  $("suspend").hidden = !!person.suspended;
  $("unsuspend").hidden = !person.suspended;
  $("person-audit").replaceChildren(...(p.audit || []).map(auditItem));
  $("person-title").focus();
}

// A change to the person shown: a POST through the API (the browser sends the page's Origin),
// then the person read again, so what is shown is what the store holds.
async function change(path, body, done) {
  clearMessages();
  const answer = await call("api/users/" + encodeURIComponent(person.id) + "/" + path, body || {});
  if (answer.status !== 204) return trouble(answer);
  $("notice").textContent = done;
  if (path !== "delete") await loadPerson(person.id);
}

// ---- the audit
async function loadAudit() {
  const params = new URLSearchParams();
  const kind = $("audit-kind").value.trim();
  const email = $("audit-email").value.trim();
  if (kind) params.set("kind", kind);
  if (email) params.set("email", email);
  const csv = new URLSearchParams(params);
  csv.set("format", "csv");
  $("audit-csv").href = "api/audit?" + csv.toString();
  const answer = await call("api/audit?" + params.toString());
  if (answer.status !== 200) return trouble(answer);
  show("audit-view");
  $("audit").replaceChildren(...answer.body.entries.map(auditItem));
}

function route() {
  clearMessages();
  const hash = location.hash.slice(1);
  if (hash.startsWith("user=")) return loadPerson(decodeURIComponent(hash.slice(5)));
  if (hash === "audit") return loadAudit();
  show("users-view");
  $("users-view").hidden = true;  // shown once the API said this account may read
  return loadUsers(false);
}

$("search").addEventListener("submit", (e) => {
  e.preventDefault();
  clearMessages();
  loadUsers(false);
});
$("more").addEventListener("click", () => loadUsers(true));
$("back").addEventListener("click", (e) => {
  e.preventDefault();
  location.hash = "";
});
$("suspend").addEventListener("click", () => change("suspend", {}, t("The account is suspended.")));
$("unsuspend").addEventListener("click", () => change("unsuspend", {}, t("The account is no longer suspended.")));
$("revoke").addEventListener("click", () => change("sessions/revoke", {}, t("Every session of the account has ended.")));
$("mfa-reset").addEventListener("click", () => change("mfa/reset", {}, t("The second factors of the account are removed.")));
$("roles-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const role = $("role-name").value.trim();
  const op = e.submitter && e.submitter.value === "remove" ? "remove" : "add";
  change("roles", { [op]: [role] }, t("The roles are changed."));
});
$("delete-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  if ($("delete-confirm").value.trim() !== person.email) {
    $("error").textContent = t("Type the account's address exactly to delete it.");
    return;
  }
  await change("delete", {}, t("The account is deleted."));
  if ($("error").textContent === "" && $("fresh-needed").hidden) location.hash = "";
});
$("audit-search").addEventListener("submit", (e) => {
  e.preventDefault();
  clearMessages();
  loadAudit();
});
window.addEventListener("hashchange", route);
route();
