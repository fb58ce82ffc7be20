"""The server's configuration: where the pack is, who may call, the limits, the ledger.

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

__all__ = ["Limits", "ServeConfig", "hash_token", "load_config", "new_token"]


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 1 << 20  # a request body larger than this: 413
    max_batch: int = 10_000  # facts per batch request: 413 beyond
    timeout_ms: int = 10_000  # reading the body and deciding; past it: 408 (a batch: the rest of its lines)


@dataclass(frozen=True)
class ServeConfig:
    policy: str | None = None  # pack directory (None: the CLI's selection: $STOPRULE_POLICY, .stoprule/, bundled)
    tokens: tuple[tuple[str, str], ...] = ()  # (name, "sha256:<hex>")
    ledger: str | None = None  # path or postgresql:// URL; None: nothing recorded
    limits: Limits = field(default_factory=Limits)
    reload_interval_ms: int = 1000
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


class ConfigError(ValueError):
    """The server's config file is not usable (names the file and the field)."""


def _int(where: str, value: object, low: int = 1) -> int:
    if type(value) is not int or value < low:
        raise ConfigError(f"{where}: must be an integer >= {low}, not {value!r}")
    return value


def load_config(path: str) -> ServeConfig:
    """Read and check the YAML config at ``path`` (relative ``policy`` paths are relative to it)."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh) or {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a mapping")
    known = {"policy", "tokens", "ledger", "limits", "reload_interval_ms", "console"}
    extra = sorted(set(data) - known)
    if extra:
        raise ConfigError(f"{path}: unknown field(s) {', '.join(map(str, extra))} (known: {', '.join(sorted(known))})")
    base = os.path.dirname(os.path.abspath(path))
    policy = data.get("policy")
    if policy is not None and not isinstance(policy, str):
        raise ConfigError(f"{path}: policy: must be a directory path")
    tokens = []
    for i, item in enumerate(data.get("tokens") or []):
        where = f"{path}: tokens[{i}]"
        if not isinstance(item, dict) or set(item) - {"name", "sha256"} or "sha256" not in item:
            raise ConfigError(f"{where}: must be {{name: ..., sha256: sha256:<hex>}}")
        h = item["sha256"]
        if not isinstance(h, str) or not h.startswith("sha256:") or len(h) != 71:
            raise ConfigError(f"{where}.sha256: not a token hash (`stoprule serve --new-token` prints one)")
        tokens.append((str(item.get("name", f"token{i}")), h))
    limits_data = data.get("limits") or {}
    if not isinstance(limits_data, dict) or set(limits_data) - {f.name for f in fields(Limits)}:
        raise ConfigError(f"{path}: limits: known fields are {', '.join(f.name for f in fields(Limits))}")
    limits = Limits(**{k: _int(f"{path}: limits.{k}", v) for k, v in limits_data.items()})
    ledger = data.get("ledger")
    if ledger is not None and not isinstance(ledger, str):
        raise ConfigError(f"{path}: ledger: must be a path or a postgresql:// URL")
    if ledger and "://" not in ledger:
        ledger = os.path.join(base, ledger)
    console = data.get("console") or {}
    resolvers = console.get("resolve") if isinstance(console, dict) else None
    if not isinstance(console, dict) or set(console) - {"resolve"} or not (
        resolvers is None or (isinstance(resolvers, list) and all(isinstance(n, str) for n in resolvers))
    ):
        raise ConfigError(f"{path}: console: must be {{resolve: [token names]}}")
    unknown = sorted(set(resolvers or ()) - {name for name, _ in tokens})
    if unknown:
        raise ConfigError(f"{path}: console.resolve: no token named {', '.join(unknown)}")
    return ServeConfig(
        console_resolve=tuple(resolvers or ()),
        policy=os.path.join(base, policy) if policy else None,
        tokens=tuple(tokens),
        ledger=ledger,
        limits=limits,
        reload_interval_ms=_int(f"{path}: reload_interval_ms", data.get("reload_interval_ms", 1000)),
    )
