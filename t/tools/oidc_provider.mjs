// A real OpenID provider for the tests, built on the certified oidc-provider package: the module
// is its relying party. Listens on 127.0.0.1 only; the issuer is http://127.0.0.1:PORT.
//
// Usage:
//   node t/tools/oidc_provider.mjs --port P --keys FILE --client-id ID --client-secret S
//        --redirect-uri URI [--redirect-uri URI2 ...] [--alg RS256|ES256] [--auth post|basic]
//        [--interactive] [--client-id2 ID2 --client-secret2 S2]
//
// --keys FILE is a private JWKS {"keys":[...]}; when FILE is missing, one RS256 (RSA 2048) and one
// ES256 (P-256) key with random kids are made and written to it (mode 0600). Prints the single
// line "ready <issuer>" on stdout once listening; everything else goes to stderr.
//
// Sign-in: without --interactive every authorization request logs in afresh (no provider session
// is reused) as the "next" account and grants what was asked, through oidc-provider's interaction
// API, without a page; the client needs no cookies for that (the interaction ids are in the URLs).
// With --interactive, oidc-provider's own login and consent pages (devInteractions) are used: any
// login name is the sub, and the provider session is remembered as a real provider would.
//
// Test control, JSON bodies and answers, under /_test/ only:
//   POST /_test/next    {sub, email?, email_verified?, name?}  the account of the next logins
//                       (a field given as null removes that claim)
//   POST /_test/tamper  {mode}  rewrites the id_token of the next successful token response
//   POST /_test/error   {error, error_description?}  the next authorization request is answered
//                       with a redirect to redirect_uri?error=...&state=...
//   GET  /_test/log     [{method, path}, ...] of the requests the provider got (not /_test/ ones)
//   POST /_test/log/clear
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { parseArgs } from 'node:util';

import Provider, { errors } from 'oidc-provider';
import * as jose from 'jose';

// oidc-provider prints its development notices with console.info: keep stdout for "ready".
console.info = console.log = (...args) => console.error(...args);

const { values: opt } = parseArgs({
  options: {
    port: { type: 'string' },
    keys: { type: 'string' },
    'client-id': { type: 'string' },
    'client-secret': { type: 'string' },
    'redirect-uri': { type: 'string', multiple: true },
    alg: { type: 'string', default: 'RS256' },
    auth: { type: 'string', default: 'post' },
    interactive: { type: 'boolean', default: false },
    'client-id2': { type: 'string' },
    'client-secret2': { type: 'string' },
  },
});
function usage(msg) {
  console.error(`oidc_provider: ${msg}`);
  process.exit(2);
}
for (const name of ['port', 'keys', 'client-id', 'client-secret', 'redirect-uri']) {
  if (!opt[name]) usage(`--${name} is required`);
}
if (!['RS256', 'ES256'].includes(opt.alg)) usage('--alg is RS256 or ES256');
if (!['post', 'basic'].includes(opt.auth)) usage('--auth is post or basic');
if (!opt['client-id2'] !== !opt['client-secret2']) usage('--client-id2 goes with --client-secret2');

const issuer = `http://127.0.0.1:${Number(opt.port)}`;

// ---- Signing keys: read the private JWKS, or make one. ----
async function newKey(alg) {
  const { privateKey } = await jose.generateKeyPair(alg, { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  return { ...jwk, alg, use: 'sig', kid: crypto.randomBytes(12).toString('base64url') };
}
let jwks;
if (fs.existsSync(opt.keys)) {
  jwks = JSON.parse(fs.readFileSync(opt.keys, 'utf8'));
} else {
  jwks = { keys: [await newKey('RS256'), await newKey('ES256')] };
  fs.writeFileSync(opt.keys, `${JSON.stringify(jwks, null, 2)}\n`, { mode: 0o600 });
}

if (!jwks.keys?.some((k) => k.alg === opt.alg && k.d)) usage(`${opt.keys} has no private ${opt.alg} key`);

// ---- Clients and accounts. ----
const clients = [[opt['client-id'], opt['client-secret']]];
if (opt['client-id2']) clients.push([opt['client-id2'], opt['client-secret2']]);
const secretOf = new Map(clients);

// Account registry: sub -> claims other than sub. Unknown subs (an interactive login name) get
// <sub>@example.com, verified.
const accounts = new Map([['alice-sub', { email: 'alice@example.com', email_verified: true, name: 'Alice' }]]);
let nextSub = 'alice-sub';
const accountClaims = (sub) => accounts.get(sub) ?? { email: `${sub}@example.com`, email_verified: true };

// ---- One-shot test switches. ----
let pendingTamper = null; // a mode for the next successful token response
let pendingError = null; // {error, error_description} for the next authorization request
const requestLog = [];

const provider = new Provider(issuer, {
  clients: clients.map(([clientId, secret]) => ({
    client_id: clientId,
    client_secret: secret,
    redirect_uris: opt['redirect-uri'],
    response_types: ['code'],
    grant_types: ['authorization_code'],
    token_endpoint_auth_method: opt.auth === 'basic' ? 'client_secret_basic' : 'client_secret_post',
    id_token_signed_response_alg: opt.alg,
  })),
  jwks,
  cookies: { keys: ['oidc-test-cookie-key-1', 'oidc-test-cookie-key-2'] },
  scopes: ['openid', 'email', 'profile'],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // Put the scope-granted claims (email, email_verified, name) into the ID token, not only userinfo.
  conformIdTokenClaims: false,
  // PKCE (S256) for every client, the confidential ones included.
  pkce: { required: () => true },
  features: { devInteractions: { enabled: opt.interactive } },
  async findAccount(ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        const claims = { sub };
        for (const [k, v] of Object.entries(accountClaims(sub))) if (v !== null && v !== undefined) claims[k] = v;
        return claims;
      },
    };
  },
  // /_test/error: this validator runs on every authorization request after the client,
  // redirect_uri and PKCE checks, so what it throws oidc-provider itself sends to the
  // redirect_uri with the request's state (and iss).
  extraParams: {
    async _test_error(ctx) {
      if (ctx.oidc.route !== 'authorization' || !pendingError) return;
      const { error, error_description: description } = pendingError;
      pendingError = null;
      throw new errors.CustomOIDCProviderError(error, description);
    },
  },
  ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 3600, Grant: 3600 },
  async renderError(ctx, out) {
    ctx.type = 'json';
    ctx.body = out;
  },
});
for (const event of ['server_error', 'authorization.error', 'grant.error', 'jwks.error', 'discovery.error']) {
  provider.on(event, (ctx, err) => console.error(`oidc_provider ${event}: ${err?.message} ${err?.error_description ?? ''}`));
}

// ---- ID token tampering (jose). ----
const providerKeys = new Map(); // kid -> private CryptoKey
for (const jwk of jwks.keys) providerKeys.set(jwk.kid, await jose.importJWK(jwk, jwk.alg));
const b64 = (obj) => Buffer.from(JSON.stringify(obj)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);
const sign = (payload, header, key) => new jose.SignJWT(payload).setProtectedHeader(header).sign(key);
const freshKey = async (alg) => (await jose.generateKeyPair(alg)).privateKey;

// Each mode: (header, payload, token) -> the tampered token. Header and payload are copies.
const tamperModes = {
  aud: (h, p) => sign({ ...p, aud: 'someone-else' }, h, providerKeys.get(h.kid)),
  iss: (h, p) => sign({ ...p, iss: 'http://127.0.0.1:1' }, h, providerKeys.get(h.kid)),
  expired: (h, p) => sign({ ...p, exp: now() - 600, iat: now() - 1200 }, h, providerKeys.get(h.kid)),
  future_iat: (h, p) => sign({ ...p, iat: now() + 3600, exp: now() + 7200 }, h, providerKeys.get(h.kid)),
  nonce: (h, p) => sign({ ...p, nonce: crypto.randomBytes(16).toString('base64url') }, h, providerKeys.get(h.kid)),
  no_nonce: (h, p) => { delete p.nonce; return sign(p, h, providerKeys.get(h.kid)); },
  email_unverified: (h, p) => sign({ ...p, email_verified: false }, h, providerKeys.get(h.kid)),
  sub: (h, p) => sign({ ...p, sub: 'mallory-sub' }, h, providerKeys.get(h.kid)),
  // Not re-signed: the signature's bytes are flipped (the byte, not its base64 character, so
  // the change cannot vanish into the padding bits of the last character).
  signature: (h, p, token) => {
    const [hp, pp, sp] = token.split('.');
    const sig = Buffer.from(sp, 'base64url');
    sig[0] ^= 0xff;
    return `${hp}.${pp}.${sig.toString('base64url')}`;
  },
  other_key: async (h, p) => sign(p, h, await freshKey(h.alg)),
  unknown_kid: async (h, p) => sign(p, { ...h, kid: crypto.randomBytes(12).toString('base64url') }, await freshKey(h.alg)),
  alg_none: (h, p, token) => `${b64({ alg: 'none' })}.${token.split('.')[1]}.`,
  // Algorithm confusion: HMAC-SHA256 keyed with the client secret, the rest unchanged.
  hs256: (h, p, token) => {
    const input = `${b64({ ...h, alg: 'HS256' })}.${token.split('.')[1]}`;
    const secret = secretOf.get(Array.isArray(p.aud) ? p.aud[0] : p.aud);
    return `${input}.${crypto.createHmac('sha256', secret).update(input).digest('base64url')}`;
  },
};

// ---- HTTP helpers for the control endpoints. ----
async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : {};
}
function answer(ctx, status, body) {
  ctx.status = status;
  ctx.type = 'json';
  ctx.body = body;
}

// 1. The request log, and the pages made free of outside fetches.
provider.use(async (ctx, next) => {
  if (!ctx.path.startsWith('/_test/')) requestLog.push({ method: ctx.method, path: ctx.path });
  await next();
  // oidc-provider's pages import a web font from the Internet: a test browser must not go there.
  if (typeof ctx.body === 'string' && ctx.response.is('html')) {
    ctx.body = ctx.body.replace(/@import url\(https?:[^)]*\);?/g, '');
  }
});

// 2. The control endpoints.
provider.use(async (ctx, next) => {
  if (!ctx.path.startsWith('/_test/')) return next();
  const route = `${ctx.method} ${ctx.path}`;
  let body;
  try {
    body = ctx.method === 'POST' ? await readJson(ctx.req) : {};
  } catch {
    return answer(ctx, 400, { error: 'body is not JSON' });
  }
  switch (route) {
    case 'POST /_test/next': {
      if (typeof body.sub !== 'string' || !body.sub) return answer(ctx, 400, { error: 'sub is required' });
      const account = { ...accountClaims(body.sub) };
      for (const k of ['email', 'email_verified', 'name']) if (k in body) account[k] = body[k];
      accounts.set(body.sub, account);
      nextSub = body.sub;
      return answer(ctx, 200, { sub: nextSub, ...account });
    }
    case 'POST /_test/tamper':
      if (!(body.mode in tamperModes)) return answer(ctx, 400, { error: 'unknown mode', modes: Object.keys(tamperModes) });
      pendingTamper = body.mode;
      return answer(ctx, 200, { mode: pendingTamper });
    case 'POST /_test/error':
      if (typeof body.error !== 'string' || !body.error) return answer(ctx, 400, { error: 'error is required' });
      pendingError = { error: body.error, error_description: body.error_description };
      return answer(ctx, 200, pendingError);
    case 'GET /_test/log':
      return answer(ctx, 200, requestLog);
    case 'POST /_test/log/clear':
      requestLog.length = 0;
      return answer(ctx, 200, []);
    default:
      return answer(ctx, 404, { error: `no ${route}` });
  }
});

// 3. The token endpoint. oidc-provider takes client_secret_basic and client_secret_post as one
// another's equal; here only the registered one is (the Authorization header tells which).
// Then its answer is rewritten when a tamper mode is pending.
provider.use(async (ctx, next) => {
  if (ctx.path !== '/token' || ctx.method !== 'POST') return next();
  if (/^basic /i.test(ctx.get('authorization')) !== (opt.auth === 'basic')) {
    if (opt.auth === 'basic') ctx.set('www-authenticate', 'Basic realm="oidc_provider"');
    return answer(ctx, 401, { error: 'invalid_client', error_description: `client authentication must be client_secret_${opt.auth}` });
  }
  await next();
  if (ctx.status !== 200 || !pendingTamper) return;
  const token = ctx.body?.id_token;
  if (typeof token !== 'string') return;
  const mode = pendingTamper;
  pendingTamper = null;
  const header = jose.decodeProtectedHeader(token);
  const payload = jose.decodeJwt(token);
  ctx.body = { ...ctx.body, id_token: await tamperModes[mode]({ ...header }, { ...payload }, token) };
});

// 4. Non-interactive sign-in.
if (!opt.interactive) {
  provider.use(async (ctx, next) => {
    const interaction = ctx.path.match(/^\/interaction\/([\w-]+)$/);
    const resume = ctx.path.match(/^\/auth\/([\w-]+)$/);
    // Every authorization request starts without a provider session, so it always logs in as
    // the current "next" account. The interaction ids travel in the URLs: the (signed) cookies
    // that oidc-provider binds them with are supplied here, and a client without cookies works.
    const cookie = (type, value) => {
      const pair = `${provider.cookieName(type)}=${value}`;
      return `${pair}; ${provider.cookieName(type)}.sig=${ctx.cookies.keys.sign(pair)}`;
    };
    if (ctx.path === '/auth') delete ctx.req.headers.cookie;
    if (resume) ctx.req.headers.cookie = cookie('resume', resume[1]);
    if (!interaction || ctx.method !== 'GET') return next();

    ctx.req.headers.cookie = cookie('interaction', interaction[1]);
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const { prompt, params } = details;
    let result;
    if (prompt.name === 'login') {
      // Log in and consent at once: a grant of the requested scopes and claims.
      const grant = new provider.Grant({ accountId: nextSub, clientId: params.client_id });
      grant.addOIDCScope(String(params.scope ?? 'openid'));
      if (params.claims) {
        const requested = JSON.parse(params.claims);
        grant.addOIDCClaims([...Object.keys(requested.id_token ?? {}), ...Object.keys(requested.userinfo ?? {})]);
      }
      result = { login: { accountId: nextSub }, consent: { grantId: await grant.save() } };
    } else {
      // A consent prompt on its own: add what it says is missing to the grant.
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: details.session?.accountId ?? nextSub, clientId: params.client_id });
      if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
      if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
      result = { consent: { grantId: await grant.save() } };
    }
    const returnTo = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: true });
    ctx.redirect(returnTo);
    ctx.status = 303;
  });
}

// ---- Listen on loopback; stop cleanly on SIGTERM/SIGINT. ----
const server = http.createServer(provider.callback());
server.on('error', (err) => {
  console.error(`oidc_provider: ${err.message}`);
  process.exit(1);
});
server.listen(Number(opt.port), '127.0.0.1', () => process.stdout.write(`ready ${issuer}\n`));
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
