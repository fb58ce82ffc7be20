"""The server's configuration: where the pack is, who may call and what each token may do, the
limits, the ledger.

    policy: ./policies              # the pack directory (hot-reloaded)
    tokens:
      - name: ci
        sha256: sha256:9f86d08...
        scopes: [evaluate, "record:ci-*"]   # what the token may do (serve/tokens.py); default: everything
    ledger: postgresql://stoprule@db/stoprule   # optional: record decisions that name a run
    limits: {max_body_bytes: 1048576, max_batch: 10000, timeout_ms: 10000, ledger_timeout_ms: 1500,
             header_timeout_ms: 10000, max_connections: 0}
    ledger_connections: 4           # per worker: database work runs on this many threads, off the event loop
    anchor_interval_ms: 1000        # PostgreSQL: how often each worker anchors the runs written since the last anchor
    probe_timeout_ms: 5000          # a worker that does not answer the supervisor's probe this long is replaced
    reload_interval_ms: 1000
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields

from stoprule.serve.tokens import Token, find, parse_scope

__all__ = ["ConfigError", "Limits", "ServeConfig", "load_config"]


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 1 << 20  # a request body larger than this: 413
    max_batch: int = 10_000  # facts per batch request: 413 beyond
    timeout_ms: int = 10_000  # reading the body and deciding; past it: 408 (a batch: the rest of its lines)
    ledger_timeout_ms: int = 1_500  # the database work of one request (queue, locks, statements); past it: 503
    header_timeout_ms: int = 10_000  # a connection's next request head must be complete within this: else closed
    max_connections: int = 0  # open connections per worker (0: what its open-file limit allows); past it the
    # connection idle the longest is closed


@dataclass(frozen=True)
class ServeConfig:
    policy: str | None = None  # pack directory (None: the CLI's selection: $STOPRULE_POLICY, .stoprule/, bundled)
    tokens: tuple[Token, ...] = ()
    ledger: str | None = None  # path or postgresql:// URL; None: nothing recorded
    limits: Limits = field(default_factory=Limits)
    reload_interval_ms: int = 1000
    ledger_connections: int = 4  # per worker
    anchor_interval_ms: int = 1000
    probe_timeout_ms: int = 5000
    auth: bool = True  # False only with --no-auth (loopback development)

    def token(self, header: str | None) -> Token | None:
        """The token an ``Authorization: Bearer`` header carries, or None if it is not a valid one."""
        return find(self.tokens, header)

    def to_env(self) -> dict[str, object]:
        """Plain data for the worker processes (they rebuild the config with :func:`from_env`)."""
        return {
            "policy": self.policy,
            "tokens": [[t.name, t.sha256, list(t.scopes)] for t in self.tokens],
            "ledger": self.ledger,
            "limits": {f.name: getattr(self.limits, f.name) for f in fields(Limits)},
            "auth": self.auth,
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
            **ints,
        )


_INTS = ("reload_interval_ms", "ledger_connections", "anchor_interval_ms", "probe_timeout_ms")


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
    known = {"policy", "tokens", "ledger", "limits", *_INTS}
    extra = sorted(set(data) - known)
    if extra:
        raise ConfigError(f"{path}: unknown field(s) {', '.join(map(str, extra))} (known: {', '.join(sorted(known))})")
    base = os.path.dirname(os.path.abspath(path))
    policy = data.get("policy")
    if policy is not None and not isinstance(policy, str):
        raise ConfigError(f"{path}: policy: must be a directory path")
    tokens: list[Token] = []
    for i, item in enumerate(data.get("tokens") or []):
        where = f"{path}: tokens[{i}]"
        if not isinstance(item, dict) or set(item) - {"name", "sha256", "scopes"} or "sha256" not in item:
            raise ConfigError(f"{where}: must be {{name: ..., sha256: sha256:<hex>, scopes: [...]}}")
        h = item["sha256"]
        if not isinstance(h, str) or not h.startswith("sha256:") or len(h) != 71:
            raise ConfigError(f"{where}.sha256: not a token hash (`stoprule serve --new-token` prints one)")
        name = str(item.get("name", f"token{i}"))
        if any(t.name == name for t in tokens):
            raise ConfigError(f"{where}.name: {name!r} names another token too (the ledger records tokens by name)")
        scopes = item.get("scopes", ["*"])
        if not isinstance(scopes, list) or not scopes:
            raise ConfigError(f"{where}.scopes: must be a list of scopes, e.g. [evaluate, 'record:ci-*']")
        for j, scope in enumerate(scopes):
            try:
                parse_scope(scope)
            except ValueError as exc:
                raise ConfigError(f"{where}.scopes[{j}]: {exc}") from None
        tokens.append(Token(name, h, tuple(scopes)))
    limits_data = data.get("limits") or {}
    if not isinstance(limits_data, dict) or set(limits_data) - {f.name for f in fields(Limits)}:
        raise ConfigError(f"{path}: limits: known fields are {', '.join(f.name for f in fields(Limits))}")
    limits = Limits(**{k: _int(f"{path}: limits.{k}", v, 0 if k == "max_connections" else 1)
                       for k, v in limits_data.items()})  # fmt: skip
    ledger = data.get("ledger")
    if ledger is not None and not isinstance(ledger, str):
        raise ConfigError(f"{path}: ledger: must be a path or a postgresql:// URL")
    if ledger and "://" not in ledger:
        ledger = os.path.join(base, ledger)
    defaults = ServeConfig()
    return ServeConfig(
        policy=os.path.join(base, policy) if policy else None,
        tokens=tuple(tokens),
        ledger=ledger,
        limits=limits,
        **{k: _int(f"{path}: {k}", data.get(k, getattr(defaults, k))) for k in _INTS},  # type: ignore[arg-type]
    )
