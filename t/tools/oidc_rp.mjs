// A relying party built on openid-client (a certified OpenID Connect relying-party library that
// shares nothing with the module): t/signin_oidc_flow.t has it discover the module as a
// provider, write the authorization request (PKCE S256, state, nonce), and, once the test walked
// the browser's part, exchange the code, verify the ID token against the published keys and ask
// for the userinfo. Every check is the library's own.
//
// Usage: node t/tools/oidc_rp.mjs FILE
//   FILE: {"step": "start" | "finish", "issuer", "client_id", "client_secret"?, "redirect_uri",
//          "scope"?, "callback"?, "verifier"?, "state"?, "nonce"?}
// start prints {"url", "verifier", "state", "nonce"}; finish prints {"ok": true, "claims",
//   "userinfo", "access_token", "id_token", "refresh_token"?} or {"ok": false, "error": "...", "code"?}.
import * as fs from 'node:fs';
import * as client from 'openid-client';

const input = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));

async function configure() {
    const auth = input.client_secret ? client.ClientSecretBasic(input.client_secret) : client.None();
    // the test's provider is on a loopback http origin
    return client.discovery(new URL(input.issuer), input.client_id, input.client_secret, auth, {
        execute: [client.allowInsecureRequests],
    });
}

async function start(config) {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
        redirect_uri: input.redirect_uri,
        scope: input.scope || 'openid email',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        nonce,
    });
    return { url: url.href, verifier, state, nonce };
}

async function finish(config) {
    const tokens = await client.authorizationCodeGrant(config, new URL(input.callback), {
        pkceCodeVerifier: input.verifier,
        expectedState: input.state,
        expectedNonce: input.nonce,
        idTokenExpected: true,
    });
    const claims = tokens.claims();
    const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    return { ok: true, claims, userinfo, access_token: tokens.access_token, id_token: tokens.id_token, refresh_token: tokens.refresh_token };
}

let out;
try {
    const config = await configure();
    out = input.step === 'start' ? await start(config) : await finish(config);
} catch (e) {
    out = { ok: false, error: String(e && e.message ? e.message : e), code: e && e.code, cause: e && e.cause && String(e.cause.error || e.cause) };
}
process.stdout.write(JSON.stringify(out) + '\n');
