"""Bearer tokens and what each may do (its scopes).

A token is stored as ``sha256:<hex>`` of the token (tokens are random, 32 bytes of ``secrets``: a
plain hash is enough, no password stretching); a request's token is hashed and compared in
constant time with every stored hash. The scheme ``Bearer`` is matched in any case (RFC 9110).

Scopes (``tokens[].scopes`` in the config; a token without ``scopes`` has ``*``, every one):

    evaluate              decide without recording: /v1/evaluate, /batch, /v1/hooks (no run), /v1/policy
    record:PREFIX*        decide and record into runs whose id starts with PREFIX (``record:*``: any run)
    record:own            decide and record into runs this token started (and start new ones)
    blockers:P1,P2        the team's blockers and reports of projects P1, P2 (``blockers:*``: every project)
    metrics               GET /metrics
    console:read          the web console, read only
    console:resolve       the web console: resolve blockers
    *                     all of the above

Every decision a token records names it (the event's ``by``), so the ledger says who wrote what.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

__all__ = ["SCOPES", "Token", "bearer", "find", "hash_token", "new_token", "parse_scope"]

# the scopes that take no argument, and the ones that take one (after a colon)
SCOPES = ("evaluate", "metrics", "console:read", "console:resolve", "*")
_WITH_ARGUMENT = ("record", "blockers")


def hash_token(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> tuple[str, str]:
    """A fresh bearer token and the hash to store in the server's config."""
    token = "srv1_" + secrets.token_urlsafe(32)
    return token, hash_token(token)


def parse_scope(text: object) -> str:
    """``text`` if it is a scope (ValueError saying what a scope is, if not)."""
    if isinstance(text, str):
        if text in SCOPES:
            return text
        kind, _, arg = text.partition(":")
        if kind == "record" and (arg == "own" or (arg.endswith("*") and "*" not in arg[:-1])):
            return text
        if kind == "blockers" and arg and all(p.strip() and p == p.strip() for p in arg.split(",")):
            return text
    raise ValueError(
        f"{text!r} is not a scope (known: {', '.join(SCOPES[:-1])}, record:PREFIX*, record:own, "
        "blockers:PROJECT[,PROJECT], *)"
    )


@dataclass(frozen=True)
class Token:
    """A configured token: its name (what the ledger records), its hash, what it may do."""

    name: str
    sha256: str
    scopes: tuple[str, ...] = ("*",)

    def allows(self, scope: str) -> bool:
        """Whether the token has ``scope`` (one without an argument: ``evaluate``, ``metrics`` ...)."""
        return "*" in self.scopes or scope in self.scopes

    def may_record(self, run: str) -> tuple[bool, bool]:
        """``(allowed, only runs of its own)`` for recording into ``run``."""
        if "*" in self.scopes:
            return True, False
        own = False
        for s in self.scopes:
            kind, _, arg = s.partition(":")
            if kind != "record":
                continue
            if arg == "own":
                own = True
            elif run.startswith(arg[:-1]):
                return True, False
        return own, own

    def projects(self) -> tuple[str, ...] | None:
        """The projects whose blockers it may read and write (None: every project)."""
        if "*" in self.scopes:
            return None
        out: list[str] = []
        for s in self.scopes:
            kind, _, arg = s.partition(":")
            if kind == "blockers":
                if arg == "*":
                    return None
                out += arg.split(",")
        return tuple(out)


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header (the scheme in any case), or None."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def find(tokens: tuple[Token, ...], header: str | None) -> Token | None:
    """The configured token a request's ``Authorization`` header carries, or None."""
    given = bearer(header)
    if given is None:
        return None
    digest = hash_token(given).encode()
    found = None
    for token in tokens:  # every hash compared: no early exit on a match
        if hmac.compare_digest(digest, token.sha256.encode()):
            found = token
    return found
