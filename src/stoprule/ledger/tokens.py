"""Retry tokens: opaque to the agent, HMAC-SHA256-signed over run, node and attempt, with a key id.

::

    srt1.<key id>.<payload>.<signature>
    payload   = base64url(canonical JSON [run, node, attempt])
    signature = base64url(HMAC-SHA256(key, "srt1.<key id>.<payload>"))   (43 characters)

Verification names what is wrong: ``token.malformed`` (not a token at all),
``token.truncated`` (a prefix of one), ``token.unknown_key``, ``token.retired_key``,
``token.forged`` (the signature does not verify). Signatures are compared in constant
time, and the payload is read only after its signature verified.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import json

from stoprule import codes
from stoprule._util.records import record
from stoprule.ledger.errors import TokenError
from stoprule.ledger.events import canonical
from stoprule.ledger.keys import KeyRing, b64url, unb64url
from stoprule.ledger.sha import compare_digest, hmac_sha256

__all__ = ["PREFIX", "Claims", "mint", "verify"]

PREFIX = "srt1"
SIG_CHARS = 43  # base64url of a 32-byte HMAC-SHA256, unpadded


@record
class Claims:
    """What a verified token says: the blocked node it may retry, and the key that signed it."""

    run: str
    node: str
    attempt: int
    key: str


def _sign(secret: bytes, kid: str, payload: str) -> bytes:
    return hmac_sha256(secret, f"{PREFIX}.{kid}.{payload}".encode())


def mint(ring: KeyRing, run: str, node: str, attempt: int) -> str:
    """A token for retrying ``node`` of ``run`` (its ``attempt``), signed with the ring's active key."""
    key = ring.signing_key()
    assert key.secret is not None
    payload = b64url(canonical([run, node, attempt]).encode())
    return f"{PREFIX}.{key.id}.{payload}.{b64url(_sign(key.secret, key.id, payload))}"


def verify(ring: KeyRing, token: str) -> Claims:
    """The token's claims if its signature verifies with a live key; TokenError saying why not."""
    if not token.startswith(PREFIX + "."):
        if token and PREFIX.startswith(token):
            raise TokenError(codes.TOKEN_TRUNCATED, "the retry token is truncated (copy all of it)")
        raise TokenError(codes.TOKEN_MALFORMED, "the value given to --retry is not a stoprule retry token")
    parts = token.split(".")
    if len(parts) > 4:
        raise TokenError(codes.TOKEN_MALFORMED, "the retry token has too many parts")
    if len(parts) < 4 or not all(parts[1:]) or len(parts[3]) < SIG_CHARS:
        raise TokenError(codes.TOKEN_TRUNCATED, "the retry token is truncated (copy all of it)")
    _, kid, payload, sig = parts
    if len(sig) > SIG_CHARS:
        raise TokenError(codes.TOKEN_MALFORMED, "the retry token's signature is too long")
    try:
        mac = unb64url(sig)
    except ValueError:
        mac = b""
    if b64url(mac) != sig:  # not base64url, or a non-canonical spelling of a signature
        raise TokenError(codes.TOKEN_MALFORMED, "the retry token's signature is not valid base64url")
    key = ring.keys.get(kid)
    if key is None:
        if not ring.keys:
            raise TokenError(
                codes.TOKEN_UNKNOWN_KEY,
                f"no signing keys exist beside this ledger ({ring.path}): the token was not issued here",
            )
        message = f"the retry token names key {kid!r}, which this ledger never had (forged, or foreign)"
        raise TokenError(codes.TOKEN_UNKNOWN_KEY, message)
    if key.secret is None:
        raise TokenError(
            codes.TOKEN_RETIRED_KEY,
            f"the retry token was signed with key {kid}, retired at {key.retired}; it is no longer accepted",
        )
    if not compare_digest(mac, _sign(key.secret, kid, payload)):
        raise TokenError(codes.TOKEN_FORGED, "the retry token's signature does not verify: it was forged or altered")
    try:
        run, node, attempt = json.loads(unb64url(payload))
    except (ValueError, TypeError):
        raise TokenError(codes.TOKEN_MALFORMED, "the retry token's payload is unreadable") from None
    return Claims(run, node, attempt, kid)
