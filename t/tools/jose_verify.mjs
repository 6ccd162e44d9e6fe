// Checks ID tokens with jose, a JOSE library that shares nothing with the module: the unit tests
// of the OpenID provider's core (t/unit/oidc_provider_test.cpp) hand it the provider's JWKS and the
// tokens it signed, and compare its verdicts with what they expect.
//
// Usage: node t/tools/jose_verify.mjs FILE
//   FILE: {"jwks": {...}, "issuer": "...", "audience": "...", "tokens": ["h.p.s", ...]}
// Prints one JSON line: [{"ok": true, "alg": "RS256", "sub": "...", "nonce": "..."} or
//   {"ok": false, "code": "<jose's error code>"}, ...], one entry per token, in order.
import * as fs from 'node:fs';
import { createLocalJWKSet, jwtVerify } from 'jose';

const input = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const keys = createLocalJWKSet(input.jwks);
const out = [];
for (const token of input.tokens) {
    try {
        const { payload, protectedHeader } = await jwtVerify(token, keys, {
            issuer: input.issuer,
            audience: input.audience,
            algorithms: ['RS256', 'ES256', 'EdDSA'],
            requiredClaims: ['sub', 'iat', 'exp', 'auth_time'],
            // the tests sign with a fixed clock
            currentDate: new Date(payload_time(token) * 1000),
        });
        out.push({ ok: true, alg: protectedHeader.alg, kid: protectedHeader.kid, sub: payload.sub, nonce: payload.nonce });
    } catch (e) {
        out.push({ ok: false, code: e.code || String(e) });
    }
}
process.stdout.write(JSON.stringify(out) + '\n');

// The token's own iat, read without trusting it (only to set the clock the check uses).
function payload_time(token) {
    try {
        return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).iat || 0;
    } catch {
        return 0;
    }
}
