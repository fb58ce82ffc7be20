"""The server's configuration (``stoprule serve --config FILE``): where the pack is, who may
call, the limits, the ledger. Read by the one loader (:mod:`stoprule.config.loader`); defaults
in :mod:`stoprule.config.defaults`.

Bearer tokens are stored as ``sha256:<hex>`` of the token (tokens are random, 32 bytes of
``secrets``: a plain hash is enough, no password stretching); a request's token is hashed and
compared in constant time with every stored hash.

    policy: ./policies              # the pack directory (hot-reloaded)
    tokens:
      - name: ci
        sha256: sha256:9f86d08...
    ledger: postgresql://stoprule@db/stoprule   # optional: record decisions that name a run
    limits: {max_body_bytes: 1048576, max_batch: 10000, timeout_ms: 10000}
    reload_interval_ms: 1000
    console: {resolve: [ops]}     # the tokens that may resolve blockers in /console (every token reads)
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass, field, fields

from pydantic import BaseModel, ConfigDict, Field

from stoprule import codes
from stoprule.config.defaults import SERVE_DEFAULTS, SERVE_LIMITS
from stoprule.config.loader import load_document
from stoprule.config.source import read_config
from stoprule.diagnostics import ConfigError, Diagnostic

__all__ = ["Limits", "ServeConfig", "ServeFile", "hash_token", "load_serve_config", "new_token"]


@dataclass(frozen=True)
class Limits:
    """What one request may ask (defaults: :data:`stoprule.config.defaults.SERVE_LIMITS`)."""

    max_body_bytes: int = SERVE_LIMITS["max_body_bytes"]  # a request body larger than this: 413
    max_batch: int = SERVE_LIMITS["max_batch"]  # facts per batch request: 413 beyond
    timeout_ms: int = SERVE_LIMITS["timeout_ms"]  # reading the body and deciding; past it: 408


@dataclass(frozen=True)
class ServeConfig:
    policy: str | None = None  # pack directory (None: the CLI's selection: $STOPRULE_POLICY, .stoprule/, bundled)
    tokens: tuple[tuple[str, str], ...] = ()  # (name, "sha256:<hex>")
    ledger: str | None = None  # path or postgresql:// URL; None: nothing recorded
    limits: Limits = field(default_factory=Limits)
    reload_interval_ms: int = SERVE_DEFAULTS["reload_interval_ms"]
    auth: bool = True  # False only with --no-auth (loopback development)
    console_resolve: tuple[str, ...] = ()  # names of the tokens that may resolve blockers in the console

    def token_name(self, header: str | None) -> str | None:
        """The name of the token in an ``Authorization: Bearer`` header, or None if it is not valid."""
        if not header or not header.startswith("Bearer "):
            return None
        given = hash_token(header[7:].strip())
        found = None
        for name, stored in self.tokens:  # every hash compared: no early exit on a match
            if hmac.compare_digest(given.encode(), stored.encode()):
                found = name
        return found

    def to_env(self) -> dict[str, object]:
        """Plain data for the worker processes (they rebuild the config with :func:`from_env`)."""
        return {
            "policy": self.policy,
            "tokens": [list(t) for t in self.tokens],
            "ledger": self.ledger,
            "limits": {f.name: getattr(self.limits, f.name) for f in fields(Limits)},
            "reload_interval_ms": self.reload_interval_ms,
            "auth": self.auth,
            "console_resolve": list(self.console_resolve),
        }

    @classmethod
    def from_env(cls, data: dict[str, object]) -> ServeConfig:
        limits = data.get("limits") or {}
        assert isinstance(limits, dict)
        tokens = data.get("tokens") or []
        assert isinstance(tokens, list)
        return cls(
            policy=data.get("policy"),  # type: ignore[arg-type]
            tokens=tuple((str(n), str(h)) for n, h in tokens),
            ledger=data.get("ledger"),  # type: ignore[arg-type]
            limits=Limits(**limits),
            reload_interval_ms=int(data.get("reload_interval_ms", 1000)),  # type: ignore[call-overload]
            auth=bool(data.get("auth", True)),
            console_resolve=tuple(str(n) for n in data.get("console_resolve") or ()),  # type: ignore[attr-defined]
        )


def hash_token(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> tuple[str, str]:
    """A fresh bearer token and the hash to store in the server's config."""
    token = "srv1_" + secrets.token_urlsafe(32)
    return token, hash_token(token)


class _Token(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    sha256: str = Field(pattern=r"^sha256:[0-9a-f]{64}$", description="`stoprule serve --new-token` prints one")


class _Limits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_body_bytes: int = Field(SERVE_LIMITS["max_body_bytes"], ge=1, strict=True)
    max_batch: int = Field(SERVE_LIMITS["max_batch"], ge=1, strict=True)
    timeout_ms: int = Field(SERVE_LIMITS["timeout_ms"], ge=1, strict=True)


class _Console(BaseModel):
    model_config = ConfigDict(extra="forbid")

    resolve: list[str] = Field(default_factory=lambda: list(SERVE_DEFAULTS["console"]["resolve"]),
                               description="token names that may resolve blockers")


class ServeFile(BaseModel):
    """The ``stoprule serve --config`` file (unknown keys are errors)."""

    model_config = ConfigDict(extra="forbid")

    policy: str | None = Field(SERVE_DEFAULTS["policy"], min_length=1)
    tokens: list[_Token] = Field(default_factory=list)
    ledger: str | None = Field(SERVE_DEFAULTS["ledger"], min_length=1)
    limits: _Limits = Field(default_factory=lambda: _Limits.model_validate({}))
    reload_interval_ms: int = Field(SERVE_DEFAULTS["reload_interval_ms"], ge=1, strict=True)
    console: _Console = Field(default_factory=_Console)


def load_serve_config(path: str) -> ServeConfig:
    """Read and check the YAML config at ``path`` (relative ``policy`` and ``ledger`` paths are
    relative to it). Raises :class:`~stoprule.diagnostics.ConfigError` naming the file, line and key."""
    data = read_config(path)
    if data is None:
        raise ConfigError([Diagnostic(path, 1, 1, codes.CONFIG_UNREADABLE, "no such file")])
    found = load_document(path, data, ServeFile)
    base = os.path.dirname(os.path.abspath(path))
    ledger = found.ledger
    if ledger and "://" not in ledger:
        ledger = os.path.join(base, ledger)
    tokens = tuple((t.name or f"token{i}", t.sha256) for i, t in enumerate(found.tokens))
    unknown = sorted(set(found.console.resolve) - {name for name, _ in tokens})
    if unknown:
        raise ConfigError([Diagnostic(path, 1, 1, codes.CONFIG_INVALID, f"no token named {', '.join(unknown)}",
                                      "console.resolve")])  # fmt: skip
    return ServeConfig(
        console_resolve=tuple(found.console.resolve),
        policy=os.path.join(base, found.policy) if found.policy else None,
        tokens=tokens,
        ledger=ledger,
        limits=Limits(**found.limits.model_dump()),
        reload_interval_ms=found.reload_interval_ms,
    )
