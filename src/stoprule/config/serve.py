"""The server's configuration (``stoprule serve --config FILE``): where the pack is, who may call
and what each token may do, the limits, the ledger. Read by the one loader
(:mod:`stoprule.config.loader`); defaults in :mod:`stoprule.config.defaults`.

Bearer tokens are stored as ``sha256:<hex>`` of the token (tokens are random, 32 bytes of
``secrets``: a plain hash is enough, no password stretching); a request's token is hashed and
compared in constant time with every stored hash. The scheme ``Bearer`` is matched in any case.

    policy: ./policies              # the pack directory (hot-reloaded)
    tokens:
      - name: ci
        sha256: sha256:9f86d08...
        scopes: [evaluate, "record:ci-*"]   # what the token may do (below); without scopes: everything
    ledger: postgresql://stoprule@db/stoprule   # optional: record decisions that name a run
    limits: {max_body_bytes: 1048576, max_batch: 10000, timeout_ms: 10000, ledger_timeout_ms: 1500,
             header_timeout_ms: 10000, max_connections: 0}
    ledger_connections: 4           # per worker: database work runs on this many threads, off the event loop
    anchor_interval_ms: 1000        # PostgreSQL: how often the runs written since the last anchor are anchored
    probe_timeout_ms: 5000          # a worker that does not answer the supervisor's probe this long is replaced
    reload_interval_ms: 1000
    console: {resolve: [ops]}       # tokens that may resolve blockers in /console (as the scope console:resolve)

Scopes (a token without ``scopes`` has ``*``, every one):

    evaluate              decide without recording: /v1/evaluate, /batch, /v1/hooks (no run), /v1/policy
    record:PREFIX*        decide and record into runs whose id starts with PREFIX (``record:*``: any run)
    record:own            decide and record into runs this token started (and start new ones)
    blockers:P1,P2        the team's blockers and reports of projects P1, P2 (``blockers:*``: every project)
    metrics               GET /metrics
    console:read          the web console, read only
    console:resolve       the web console: resolve blockers
    *                     all of the above (in the console: read; resolving takes ``console.resolve``
                          or the scope ``console:resolve`` named)

Every decision a token records names it (the event's ``by``), so the ledger says who wrote what.
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
from stoprule.diagnostic import Diagnostic
from stoprule.diagnostics import ConfigError
from stoprule.language.source import parse_yaml

__all__ = [
    "SCOPES",
    "Limits",
    "ServeConfig",
    "ServeFile",
    "Token",
    "hash_token",
    "load_serve_config",
    "new_token",
    "parse_scope",
]

# the scopes that take no argument, and the ones that take one (after a colon)
SCOPES = ("evaluate", "metrics", "console:read", "console:resolve", "*")


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


def _bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header (the scheme in any case), or None."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


@dataclass(frozen=True)
class Limits:
    """What one request may ask and hold (defaults: :data:`stoprule.config.defaults.SERVE_LIMITS`)."""

    max_body_bytes: int = SERVE_LIMITS["max_body_bytes"]  # a request body larger than this: 413
    max_batch: int = SERVE_LIMITS["max_batch"]  # facts per batch request: 413 beyond
    timeout_ms: int = SERVE_LIMITS["timeout_ms"]  # reading the body and deciding; past it: 408
    ledger_timeout_ms: int = SERVE_LIMITS["ledger_timeout_ms"]  # a request's database work; past it: 503
    header_timeout_ms: int = SERVE_LIMITS["header_timeout_ms"]  # a request head must be complete by then
    max_connections: int = SERVE_LIMITS["max_connections"]  # per worker (0: what its open-file limit allows)


@dataclass(frozen=True)
class ServeConfig:
    policy: str | None = None  # pack directory (None: the CLI's selection: $STOPRULE_POLICY, .stoprule/, bundled)
    tokens: tuple[Token, ...] = ()
    ledger: str | None = None  # path or postgresql:// URL; None: nothing recorded
    limits: Limits = field(default_factory=Limits)
    reload_interval_ms: int = SERVE_DEFAULTS["reload_interval_ms"]
    ledger_connections: int = SERVE_DEFAULTS["ledger_connections"]  # per worker
    anchor_interval_ms: int = SERVE_DEFAULTS["anchor_interval_ms"]
    probe_timeout_ms: int = SERVE_DEFAULTS["probe_timeout_ms"]
    auth: bool = True  # False only with --no-auth (loopback development)
    console_resolve: tuple[str, ...] = ()  # names of the tokens that may resolve blockers in the console

    def __post_init__(self) -> None:
        # a token may be given as ``(name, "sha256:<hex>")``: every scope, as before scopes existed
        tokens = tuple(t if isinstance(t, Token) else Token(*t) for t in self.tokens)
        object.__setattr__(self, "tokens", tokens)

    def token(self, header: str | None) -> Token | None:
        """The token an ``Authorization: Bearer`` header carries, or None if it is not a valid one."""
        given = _bearer(header)
        if given is None:
            return None
        digest = hash_token(given).encode()
        found = None
        for token in self.tokens:  # every hash compared: no early exit on a match
            if hmac.compare_digest(digest, token.sha256.encode()):
                found = token
        return found

    def console_reader(self, header: str | None) -> str | None:
        """The name of the token in ``header`` if it may read the console (``console:read``,
        ``console:resolve`` or ``*``), else None."""
        token = self.token(header)
        if token is None or not (token.allows("console:read") or token.allows("console:resolve")):
            return None
        return token.name

    @property
    def console_resolvers(self) -> tuple[str, ...]:
        """The tokens that may resolve blockers in the console: those ``console.resolve`` names and
        those whose scopes name ``console:resolve``."""
        scoped = tuple(t.name for t in self.tokens if "console:resolve" in t.scopes)
        return tuple(dict.fromkeys(self.console_resolve + scoped))

    def to_env(self) -> dict[str, object]:
        """Plain data for the worker processes (they rebuild the config with :func:`from_env`)."""
        return {
            "policy": self.policy,
            "tokens": [[t.name, t.sha256, list(t.scopes)] for t in self.tokens],
            "ledger": self.ledger,
            "limits": {f.name: getattr(self.limits, f.name) for f in fields(Limits)},
            "auth": self.auth,
            "console_resolve": list(self.console_resolve),
            **{k: getattr(self, k) for k in _INTS},
        }

    @classmethod
    def from_env(cls, data: dict[str, object]) -> ServeConfig:
        limits = data.get("limits") or {}
        assert isinstance(limits, dict)
        tokens = data.get("tokens") or []
        assert isinstance(tokens, list)
        ints = {k: int(data[k]) for k in _INTS if k in data}  # type: ignore[call-overload]
        return cls(
            policy=data.get("policy"),  # type: ignore[arg-type]
            tokens=tuple(Token(str(n), str(h), tuple(sc)) for n, h, sc in tokens),
            ledger=data.get("ledger"),  # type: ignore[arg-type]
            limits=Limits(**limits),
            auth=bool(data.get("auth", True)),
            console_resolve=tuple(str(n) for n in data.get("console_resolve") or ()),  # type: ignore[attr-defined]
            **ints,
        )


_INTS = ("reload_interval_ms", "ledger_connections", "anchor_interval_ms", "probe_timeout_ms")


class _Token(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    sha256: str = Field(pattern=r"^sha256:[0-9a-f]{64}$", description="`stoprule serve --new-token` prints one")
    scopes: list[str] = Field(default_factory=lambda: ["*"], min_length=1)


class _Limits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_body_bytes: int = Field(SERVE_LIMITS["max_body_bytes"], ge=1, strict=True)
    max_batch: int = Field(SERVE_LIMITS["max_batch"], ge=1, strict=True)
    timeout_ms: int = Field(SERVE_LIMITS["timeout_ms"], ge=1, strict=True)
    ledger_timeout_ms: int = Field(SERVE_LIMITS["ledger_timeout_ms"], ge=1, strict=True)
    header_timeout_ms: int = Field(SERVE_LIMITS["header_timeout_ms"], ge=1, strict=True)
    max_connections: int = Field(SERVE_LIMITS["max_connections"], ge=0, strict=True)


class _Console(BaseModel):
    model_config = ConfigDict(extra="forbid")

    resolve: list[str] = Field(
        default_factory=lambda: list(SERVE_DEFAULTS["console"]["resolve"]),
        description="token names that may resolve blockers",
    )


class ServeFile(BaseModel):
    """The ``stoprule serve --config`` file (unknown keys are errors)."""

    model_config = ConfigDict(extra="forbid")

    policy: str | None = Field(SERVE_DEFAULTS["policy"], min_length=1)
    tokens: list[_Token] = Field(default_factory=list)
    ledger: str | None = Field(SERVE_DEFAULTS["ledger"], min_length=1)
    limits: _Limits = Field(default_factory=lambda: _Limits.model_validate({}))
    reload_interval_ms: int = Field(SERVE_DEFAULTS["reload_interval_ms"], ge=1, strict=True)
    ledger_connections: int = Field(SERVE_DEFAULTS["ledger_connections"], ge=1, strict=True)
    anchor_interval_ms: int = Field(SERVE_DEFAULTS["anchor_interval_ms"], ge=1, strict=True)
    probe_timeout_ms: int = Field(SERVE_DEFAULTS["probe_timeout_ms"], ge=1, strict=True)
    console: _Console = Field(default_factory=_Console)


def _token_problems(found: ServeFile) -> list[tuple[tuple[str | int, ...], str]]:
    """What the model's types do not say of the tokens: each scope a scope, each name once."""
    out: list[tuple[tuple[str | int, ...], str]] = []
    seen: set[str] = set()
    for i, t in enumerate(found.tokens):
        for j, scope in enumerate(t.scopes):
            try:
                parse_scope(scope)
            except ValueError as exc:
                out.append((("tokens", i, "scopes", j), str(exc)))
        name = t.name or f"token{i}"
        if name in seen:
            out.append((("tokens", i, "name"), f"{name!r} names another token too (the ledger records tokens by name)"))
        seen.add(name)
    return out


def load_serve_config(path: str) -> ServeConfig:
    """Read and check the YAML config at ``path`` (relative ``policy`` and ``ledger`` paths are
    relative to it). Raises :class:`~stoprule.diagnostics.ConfigError` naming the file, line and key."""
    data = read_config(path)
    if data is None:
        raise ConfigError([Diagnostic(path, 1, 1, codes.CONFIG_UNREADABLE, "no such file")])
    found = load_document(path, data, ServeFile)
    problems = _token_problems(found)
    if problems:
        src = parse_yaml(path, data.decode("utf-8"), [])
        raise ConfigError([src.diag(loc, codes.CONFIG_INVALID, message) for loc, message in problems])
    base = os.path.dirname(os.path.abspath(path))
    ledger = found.ledger
    if ledger and "://" not in ledger:
        ledger = os.path.join(base, ledger)
    tokens = tuple(Token(t.name or f"token{i}", t.sha256, tuple(t.scopes)) for i, t in enumerate(found.tokens))
    unknown = sorted(set(found.console.resolve) - {t.name for t in tokens})
    if unknown:
        raise ConfigError(
            [Diagnostic(path, 1, 1, codes.CONFIG_INVALID, f"no token named {', '.join(unknown)}", "console.resolve")]
        )
    return ServeConfig(
        console_resolve=tuple(found.console.resolve),
        policy=os.path.join(base, found.policy) if found.policy else None,
        tokens=tokens,
        ledger=ledger,
        limits=Limits(**found.limits.model_dump()),
        **{k: getattr(found, k) for k in _INTS},
    )
