#!/usr/bin/python3
# A second relying party, independent of openid-client and of the module: Debian's oauthlib
# (python3-oauthlib) writes the authorization request with PKCE and the token request and reads
# the token answer; PyJWT (python3-jwt) verifies the ID token against the keys the discovery
# document names. t/signin_oidc_flow.t walks the browser's part in between.
#
# Usage: oidc_rp.py FILE
#   FILE: {"step": "start" | "finish", "issuer", "client_id", "client_secret"?, "redirect_uri",
#          "callback"?, "verifier"?, "state"?, "nonce"?}
# start prints {"url", "verifier", "state", "nonce"}; finish prints {"ok": true, "claims",
#   "userinfo"} or {"ok": false, "error"}.
import base64
import json
import os
import secrets
import sys
import urllib.request

import jwt
from oauthlib.oauth2 import WebApplicationClient

# the test's provider is on a loopback http origin, which oauthlib refuses unless told
os.environ.setdefault("OAUTHLIB_INSECURE_TRANSPORT", "1")


def get_json(url, headers=None):
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as r:
        return json.loads(r.read())


def main():
    with open(sys.argv[1]) as f:
        inp = json.load(f)
    disc = get_json(inp["issuer"] + "/.well-known/openid-configuration")
    client = WebApplicationClient(inp["client_id"])
    if inp["step"] == "start":
        verifier = client.create_code_verifier(64)
        challenge = client.create_code_challenge(verifier, "S256")
        state, nonce = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        url = client.prepare_request_uri(disc["authorization_endpoint"], redirect_uri=inp["redirect_uri"],
                                         scope=["openid", "email"], state=state, nonce=nonce,
                                         code_challenge=challenge, code_challenge_method="S256")
        return {"url": url, "verifier": verifier, "state": state, "nonce": nonce}
    code = client.parse_request_uri_response(inp["callback"], state=inp["state"])["code"]
    body = client.prepare_request_body(code=code, redirect_uri=inp["redirect_uri"], code_verifier=inp["verifier"],
                                       include_client_id=True)
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if inp.get("client_secret"):
        pair = (inp["client_id"] + ":" + inp["client_secret"]).encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
    req = urllib.request.Request(disc["token_endpoint"], data=body.encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        tokens = client.parse_request_body_response(r.read().decode())
    key = jwt.PyJWKClient(disc["jwks_uri"]).get_signing_key_from_jwt(tokens["id_token"])
    claims = jwt.decode(tokens["id_token"], key.key, algorithms=disc["id_token_signing_alg_values_supported"],
                        audience=inp["client_id"], issuer=disc["issuer"],
                        options={"require": ["exp", "iat", "sub", "aud", "iss"]})
    if claims.get("nonce") != inp["nonce"]:
        return {"ok": False, "error": "nonce"}
    info = get_json(disc["userinfo_endpoint"], {"Authorization": "Bearer " + tokens["access_token"]})
    return {"ok": True, "claims": claims, "userinfo": info}


try:
    out = main()
except Exception as e:  # the test reports whatever refused
    out = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
print(json.dumps(out))
