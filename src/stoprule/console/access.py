"""Who may read the console and who may act in it.

A :class:`Gate` turns a request into a :class:`Grant` (or None: not let in):

- :class:`KeyGate` (``stoprule console``, on loopback): the key the command printed in the
  console's link, exchanged on the first visit for an ``HttpOnly``, ``SameSite=Strict`` cookie
  (or sent as ``Authorization: Bearer KEY``). The key lives only in the console's process and
  the user's terminal, so an agent that can reach the port still cannot use it. Requests must
  name a loopback host (no DNS rebinding). It may resolve unless the console is read-only
  (``--read-only``, or started from inside an agent's session).
- :class:`TokenGate` (``stoprule serve``): the server's bearer tokens, sent as a header or
  given once on the login page (kept in a cookie). Every valid token reads; resolving takes a
  token the server's config lists under ``console.resolve``.

Forms that change something carry a CSRF value derived from the credential (:func:`csrf_of`):
a page of another site can neither read it nor compute it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol

from starlette.requests import Request

__all__ = ["Gate", "Grant", "KeyGate", "TokenGate", "csrf_of"]

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


@dataclass(frozen=True)
class Grant:
    """What a request may do: ``who`` (shown on the page), ``resolve`` (act on blockers), and why
    not when it may not (``read_only``)."""

    who: str
    resolve: bool
    credential: str
    read_only: str | None = None

    @property
    def csrf(self) -> str:
        return csrf_of(self.credential)


def csrf_of(credential: str) -> str:
    return hmac.new(credential.encode(), b"stoprule-console-csrf", hashlib.sha256).hexdigest()[:32]


class Gate(Protocol):
    cookie: str
    login_hint: str  # what the login page tells someone who is not let in
    accepts_login: bool  # the login page takes a credential in a form

    def grant(self, request: Request) -> Grant | None: ...

    def check(self, credential: str) -> Grant | None: ...


def _hostname(host: str) -> str:
    """``host[:port]`` or ``[v6]:port`` without the port."""
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0]


def _bearer(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


class KeyGate:
    """The local console's key (see the module docstring)."""

    accepts_login = False

    def __init__(self, key: str, port: int, read_only: str | None = None) -> None:
        self.key = key
        self.cookie = f"stoprule_console_{port}"
        self.read_only = read_only
        self.login_hint = (
            "Open the link `stoprule console` printed when it started (it ends in ?key=...); "
            "the key is not stored anywhere else."
        )

    def check(self, credential: str) -> Grant | None:
        if not hmac.compare_digest(credential.encode(), self.key.encode()):
            return None
        return Grant("you (this machine)", self.read_only is None, credential, self.read_only)

    def grant(self, request: Request) -> Grant | None:
        if _hostname(request.headers.get("host") or "") not in LOOPBACK:
            return None
        for credential in (request.cookies.get(self.cookie), _bearer(request), request.query_params.get("key")):
            if credential:
                return self.check(credential)
        return None


class TokenGate:
    """The server's bearer tokens: ``token_name(header)`` names a valid token (None: not valid);
    ``resolvers``: the token names that may resolve; ``open``: no auth (loopback development)."""

    accepts_login = True
    cookie = "stoprule_console"

    def __init__(
        self, token_name: Callable[[str | None], str | None], resolvers: Collection[str], open: bool = False
    ) -> None:
        self.token_name = token_name
        self.resolvers = frozenset(resolvers)
        self.open = open
        self.login_hint = "Give a bearer token of this server (`stoprule serve --new-token` makes one)."

    def check(self, credential: str) -> Grant | None:
        name = self.token_name(f"Bearer {credential}")
        if name is None:
            return None
        if name in self.resolvers:
            return Grant(f"token {name}", True, credential)
        return Grant(
            f"token {name}",
            False,
            credential,
            f"token {name} may read but not resolve "
            "(the server's config lists the tokens that may under console.resolve)",
        )

    def grant(self, request: Request) -> Grant | None:
        for credential in (_bearer(request), request.cookies.get(self.cookie)):
            if credential:
                found = self.check(credential)
                if found is not None:
                    return found
        if self.open:
            return Grant(
                "anyone (the server runs without auth)",
                False,
                "no-auth",
                "the server runs without auth (--no-auth): the console is read-only",
            )
        return None
