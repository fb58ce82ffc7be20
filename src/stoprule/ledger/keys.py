"""The signing keys of one ledger: a JSON file beside it (``<ledger>.keys``, mode 0600).

::

    {"format": "stoprule-keys/1", "active": "k2",
     "keys": [{"id": "k1", "created": "...", "retired": "...", "secret": null},
              {"id": "k2", "created": "...", "retired": null, "secret": "<base64url, 32 bytes>"}]}

The file is created on first use, and every change is written to a temporary file
(0600, fsynced) that then replaces it: a reader sees the old keys or the new ones,
never half a file. Creation links the new file into place (it fails if another
process was first, and that process's keys are used). ``rotate`` adds a key and makes
it the signing key; ``retire`` deletes a key's secret, so tokens it signed stop
verifying. Both run under the ledger's write lock so concurrent changes serialise.

The active key also signs the ledger head (``head_mac``) and each run's status row (``run_mac``;
see ``store``), so the file is made with the first recorded decision; ``rotate`` signs the head
again with the new key, and ``retire`` first signs again whatever the retired key still signs.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import time

from stoprule import codes
from stoprule._util.files import atomic_write
from stoprule._util.records import record
from stoprule.ledger.errors import LedgerError
from stoprule.ledger.sha import hmac_sha256

TYPE_CHECKING = False
if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from typing import Any, Protocol

__all__ = [
    "FORMAT", "Key", "KeyRing", "b64url", "ensure", "head_mac", "load", "retire", "rotate", "run_mac", "unb64url",
]  # fmt: skip

FORMAT = "stoprule-keys/1"
SECRET_BYTES = 32


@record
class Key:
    id: str
    created: str
    retired: str | None
    secret: bytes | None  # None once retired

    def to_dict(self, *, secret: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "created": self.created, "retired": self.retired}
        if secret:
            out["secret"] = b64url(self.secret) if self.secret is not None else None
        return out


@record
class KeyRing:
    path: str
    active: str | None
    keys: dict[str, Key]

    def signing_key(self) -> Key:
        if self.active is None:
            raise LedgerError(codes.LEDGER_NO_KEYS, f"no signing key in {self.path}")
        return self.keys[self.active]

    def to_json(self) -> str:
        keys = [k.to_dict(secret=True) for k in self.keys.values()]
        return json.dumps({"format": FORMAT, "active": self.active, "keys": keys}, indent=2) + "\n"


def b64url(raw: bytes) -> str:
    """Unpadded base64url."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    """Decode unpadded base64url; ValueError if it is not."""
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)


def head_mac(secret: bytes, events: int, head: str) -> str:
    """The signature of the ledger head: base64url(HMAC-SHA256(secret, "stoprule-head/1\\n<events>\\n<head>"))."""
    text = f"stoprule-head/1\n{events}\n{head}".encode("utf-8", "surrogateescape")  # verify reads damaged text so
    return b64url(hmac_sha256(secret, text))


def run_mac(secret: bytes, run: str, events: int, head: str) -> str:
    """The signature of a run's status row:
    base64url(HMAC-SHA256(secret, "stoprule-run/1\\n<run>\\n<events>\\n<head>"))."""
    text = f"stoprule-run/1\n{run}\n{events}\n{head}".encode("utf-8", "surrogateescape")
    return b64url(hmac_sha256(secret, text))


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _bad(path: str, why: str) -> LedgerError:
    return LedgerError(codes.LEDGER_KEYS_CORRUPT, f"key file {path} is not valid ({why}); it was left untouched")


def load(path: str) -> KeyRing:
    """The keys in ``path`` (an empty ring if the file does not exist yet)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return KeyRing(path, None, {})
    except OSError as exc:
        raise LedgerError(codes.LEDGER_KEYS_UNREADABLE, f"cannot read key file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fh.fileno()).st_mode
        if stat.S_IMODE(mode) & 0o077:
            raise LedgerError(
                codes.LEDGER_KEYS_EXPOSED,
                f"key file {path} is readable by others (mode {stat.S_IMODE(mode):04o}); run: chmod 600 {path}",
            )
        raw = fh.read()
    return _parse(path, raw)


def _parse(path: str, raw: bytes) -> KeyRing:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _bad(path, f"not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("keys"), list):
        raise _bad(path, f"expected an object with format {FORMAT!r} and a list of keys")
    keys: dict[str, Key] = {}
    for i, k in enumerate(data["keys"]):
        try:
            kid, created, retired, secret = k["id"], k["created"], k.get("retired"), k.get("secret")
            blob = unb64url(secret) if secret is not None else None
        except (TypeError, KeyError, ValueError):
            raise _bad(path, f"keys[{i}] is malformed") from None
        if not isinstance(kid, str) or not kid.isalnum() or kid in keys:
            raise _bad(path, f"keys[{i}] has a missing, duplicate or non-alphanumeric id")
        if (blob is None) != (retired is not None) or (blob is not None and len(blob) != SECRET_BYTES):
            raise _bad(path, f"key {kid}: a live key needs a {SECRET_BYTES}-byte secret, a retired key none")
        keys[kid] = Key(kid, created, retired, blob)
    active = data.get("active")
    if active is not None and (active not in keys or keys[active].retired):
        raise _bad(path, f"active key {active!r} is missing or retired")
    return KeyRing(path, active, keys)


def _write(ring: KeyRing, *, exclusive: bool) -> bool:
    """Write ``ring`` atomically (0600); with ``exclusive``, only if no key file exists yet."""
    try:
        return atomic_write(ring.path, ring.to_json(), mode=0o600, exclusive=exclusive, sync_folder=True)
    except OSError as exc:
        raise LedgerError(codes.LEDGER_KEYS_UNWRITABLE, f"cannot write key file {ring.path}: {exc.strerror}") from None


if TYPE_CHECKING:

    class Ledger(Protocol):
        """What ``rotate`` and ``retire`` need of ``store.Ledger`` (which imports this module)."""

        @property
        def keys_path(self) -> str: ...
        @property
        def head_key(self) -> str | None: ...
        def write(self) -> AbstractContextManager[Any]: ...
        def resign(self, ring: KeyRing, retiring: str | None = None) -> None: ...


def _new_key(ring: KeyRing) -> Key:
    n = max((int(k[1:]) for k in ring.keys if k[1:].isdigit()), default=0) + 1
    return Key(f"k{n}", _now(), None, os.urandom(SECRET_BYTES))


def ensure(path: str) -> KeyRing:
    """The keys in ``path``, creating the file with a first signing key if there is none."""
    ring = load(path)
    if ring.active is not None:
        return ring
    if ring.keys:
        raise LedgerError(codes.LEDGER_NO_KEYS, f"every key in {path} is retired; run `stoprule keys rotate`")
    key = _new_key(ring)
    fresh = KeyRing(path, key.id, {key.id: key})
    if _write(fresh, exclusive=True):
        return fresh
    return load(path)  # another process created it first: use its keys


def rotate(ledger: Ledger) -> tuple[KeyRing, Key]:
    """Add a signing key; older keys keep verifying until retired. The ledger head is signed
    again with the new key in the same transaction (killed before it commits, the head stays
    signed with the previous key, which the file still holds)."""
    with ledger.write():
        ring = ensure(ledger.keys_path)
        key = _new_key(ring)
        ring = KeyRing(ring.path, key.id, {**ring.keys, key.id: key})
        _write(ring, exclusive=False)
        ledger.resign(ring)
    return ring, key


def retire(ledger: Ledger, kid: str) -> tuple[KeyRing, bool]:
    """Delete key ``kid``'s secret (tokens it signed are refused); False if it was already retired.

    Whatever ``kid`` still signs (run status rows; the ledger head, after a rotation killed
    before it committed) is signed with the active key first, in a transaction of its own that
    commits before the secret is deleted.
    """
    with ledger.write():
        ring = load(ledger.keys_path)
        live = ring.keys.get(kid)
        if live is not None and live.secret is not None and ring.active is not None and ring.active != kid:
            ledger.resign(ring, retiring=kid)
    with ledger.write():
        ring = load(ledger.keys_path)
        key = ring.keys.get(kid)
        if key is None:
            known = ", ".join(ring.keys) or "none"
            raise LedgerError(codes.LEDGER_UNKNOWN_KEY, f"no key {kid!r} in {ring.path} (keys: {known})")
        if key.retired:
            return ring, False
        if kid == ring.active or kid == ledger.head_key:
            raise LedgerError(
                codes.LEDGER_ACTIVE_KEY, f"key {kid} signs new tokens; run `stoprule keys rotate` first, then retire it"
            )
        ring = KeyRing(ring.path, ring.active, {**ring.keys, kid: Key(kid, key.created, _now(), None)})
        _write(ring, exclusive=False)
    return ring, True
