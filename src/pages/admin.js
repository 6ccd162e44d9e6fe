// The administrators' pages (signin_admin): the people who sign in, one person with the changes an
// administrator may make, and the audit trail. Everything comes from the JSON API under
// admin/api/, which decides who may read and who may change: this page only shows its answers,
// so it holds nothing the API would not give. The view is in the URL's fragment (#user=ID,
// #audit), so the back button and a bookmark work without any other route on the server.
import { call, describe, t, when, explain } from "./common.js";

const $ = (id) => document.getElementById(id);
const views = ["users-view", "person-view", "audit-view", "dashboard-view"];
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
// One name and value of a definition list (a person's facts, the dashboard's totals).
function fact(name, value, list = "facts") {
  const dt = document.createElement("dt");
  dt.textContent = name;
  const dd = document.createElement("dd");
  dd.textContent = value;
  $(list).append(dt, dd);
}

function auditItem(entry) {
  const li = document.createElement("li");
  li.textContent = [when(entry.at), entry.kind, entry.email, entry.client].filter(Boolean).join(" · ");
  return li;
}

function sessionItem(s) {
  const li = document.createElement("li");
  const { agent, detail } = describe(s);
  const name = document.createElement("div");
  name.textContent = agent;
  if (s.user_agent) name.title = s.user_agent;
  const hint = document.createElement("div");
  hint.className = "hint";
  hint.textContent = [t("started {when}", { when: when(s.created_at) }), detail].filter(Boolean).join(" · ");
  li.append(name, hint);
  return li;
}

function factors(mfa) {
  if (!mfa || !mfa.totp) return t("None");
  return t("Authenticator app; recovery codes left: {count}", { count: mfa.recovery_codes_left });
}

async function loadPerson(id) {
  const answer = await call("api/users/" + encodeURIComponent(id));
  if (answer.status !== 200) return trouble(answer);
  const p = answer.body;
  person = p.user;
  show("person-view");
  $("person-title").textContent = person.email;
  $("facts").replaceChildren();
  const sessions = p.sessions || [];
  const latest = sessions.reduce((at, s) => (s.created_at > at ? s.created_at : at), "");
  fact(t("State"), stateOf(person));
  fact(t("Roles"), (person.roles || []).join(", ") || "—");
  fact(t("Created"), when(person.created_at));
  fact(t("Last sign-in"), latest ? when(latest) : "—");
  fact(t("Password"), p.password ? t("Set") : t("None"));
  fact(t("Second factors"), factors(p.mfa));
  fact(t("Passkeys"), (p.passkeys || []).map((k) => k.name).join(", ") || "—");
  fact(t("Providers"), (p.providers || []).map((l) => l.provider).join(", ") || "—");
  $("person-sessions").replaceChildren(...sessions.map(sessionItem));
  $("no-sessions").hidden = sessions.length > 0;
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
// A datetime-local field's value (the visitor's local time) as the API reads a time, or "".
function isoTime(value) {
  const date = value ? new Date(value) : null;
  return date && !Number.isNaN(date.getTime()) ? date.toISOString() : "";
}

async function loadAudit() {
  const params = new URLSearchParams();
  const fields = { kind: $("audit-kind").value.trim(), email: $("audit-email").value.trim(),
    since: isoTime($("audit-since").value), until: isoTime($("audit-until").value) };
  for (const [name, value] of Object.entries(fields)) if (value) params.set(name, value);
  const csv = new URLSearchParams(params);
  csv.set("format", "csv");
  $("audit-csv").href = "api/audit?" + csv.toString();
  $("audit-json").href = "api/audit?" + params.toString();
  const answer = await call("api/audit?" + params.toString());
  if (answer.status !== 200) return trouble(answer);
  show("audit-view");
  $("audit").replaceChildren(...answer.body.entries.map(auditItem));
}

// ---- the dashboard
const SVG = "http://www.w3.org/2000/svg";
const sum = (list) => list.reduce((a, b) => a + b, 0);

function svg(name, attributes) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attributes)) e.setAttribute(k, String(v));
  return e;
}

// Bars of sign-ins and, in front of them, refusals, one pair per period; each bar says its
// period and counts on hover, and the whole chart says its totals to a screen reader.
function chart(series, label) {
  const { signins, failures } = series;
  const n = signins.length, width = 600, height = 120, step = width / n;
  const top = Math.max(1, ...signins, ...failures);
  const box = svg("svg", { viewBox: `0 0 ${width} ${height + 1}`, role: "img", class: "bars",
    "aria-label": t("{label}. Sign-ins: {signins}. Refusals: {failures}.",
      { label, signins: sum(signins), failures: sum(failures) }) });
  box.append(svg("line", { x1: 0, y1: height + 0.5, x2: width, y2: height + 0.5, class: "axis" }));
  const start = new Date(series.start).getTime();
  signins.forEach((count, i) => {
    const g = svg("g", {});
    const title = document.createElementNS(SVG, "title");
    title.textContent = t("{when}. Sign-ins: {signins}. Refusals: {failures}.",
      { when: when(start + i * series.step_seconds * 1000), signins: count, failures: failures[i] });
    g.append(title);
    for (const [value, cls, inset] of [[count, "signins", 0.1], [failures[i], "failures", 0.3]]) {
      const h = (value / top) * height;
      g.append(svg("rect", { x: i * step + step * inset, y: height - h, width: step * (1 - 2 * inset), height: h, class: cls }));
    }
    box.append(g);
  });
  // the time axis: the first period's start on one side, now on the other
  const axis = document.createElement("div");
  axis.className = "chart-axis hint";
  const from = document.createElement("span");
  from.textContent = when(start);
  const to = document.createElement("span");
  to.textContent = t("Now");
  axis.append(from, to);
  const figure = document.createElement("div");
  figure.append(box, axis);
  return figure;
}

async function loadDashboard() {
  const answer = await call("api/stats");
  if (answer.status !== 200) return trouble(answer);
  const d = answer.body;
  show("dashboard-view");
  $("totals").replaceChildren();
  const total = (name, value) => fact(name, value, "totals");
  $("no-metrics").hidden = d.metrics;
  for (const id of ["minutes-title", "minutes-chart", "hours-title", "hours-chart"]) $(id).hidden = !d.metrics;
  if (d.metrics) {
    total(t("Sign-ins"), String(sum(Object.values(d.totals.signins))));
    total(t("Refusals"), String(sum(Object.values(d.totals.failures))));
    total(t("Answered 429 (too many requests)"), String(sum(Object.values(d.totals.rate_limited))));
    total(t("Emails sent"), String(d.totals.emails.sent));
    total(t("Emails not delivered"), String(d.totals.emails.failed));
    $("minutes-chart").replaceChildren(chart(d.minutes, t("The last hour, per minute")));
    $("hours-chart").replaceChildren(chart(d.hours, t("The last two days, per hour")));
  }
  if (d.store.map_bytes > 0) {
    total(t("Store in use"), t("{used} MB of {size} MB", { used: (d.store.used_bytes / 1048576).toFixed(1),
      size: (d.store.map_bytes / 1048576).toFixed(0) }));
  }
}

// ---- an invitation
async function invite() {
  clearMessages();
  const email = $("invite-email").value.trim();
  const roles = $("invite-roles").value.split(",").map((r) => r.trim()).filter(Boolean);
  const body = { email, send: $("invite-send").checked };
  if (roles.length) body.roles = roles;
  const answer = await call("api/invitations", body);
  if (answer.status !== 200 && answer.status !== 202) return trouble(answer);
  $("notice").textContent = t("{email} is invited.", { email });
  $("invite-form").reset();
  await loadUsers(false);
}

function route() {
  clearMessages();
  const hash = location.hash.slice(1);
  if (hash.startsWith("user=")) return loadPerson(decodeURIComponent(hash.slice(5)));
  if (hash === "audit") return loadAudit();
  if (hash === "dashboard") return loadDashboard();
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
$("invite-form").addEventListener("submit", (e) => {
  e.preventDefault();
  invite();
});
window.addEventListener("hashchange", route);
route();
