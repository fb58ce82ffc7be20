"""SHA-256, HMAC-SHA256 and a constant-time compare for the ledger, without OpenSSL.

``hashlib`` and ``hmac`` load OpenSSL's libcrypto when imported: ~3 ms of every hook run
that records a decision, for a few hashes of short texts. CPython's built-in SHA-256
(``_sha2``, 3.12+; ``_sha256`` before) computes the same digests, and HMAC is RFC 2104 as
``hmac.HMAC`` computes it without OpenSSL; ``compare_digest`` is the one ``hmac`` falls back
to. A Python built without them uses ``hashlib`` and ``hmac``. The tests check every function
against ``hashlib`` and ``hmac``.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

__all__ = ["compare_digest", "hmac_sha256", "sha256_hex"]

_BLOCK = 64  # SHA-256's block size in bytes
_IPAD = bytes(b ^ 0x36 for b in range(256))
_OPAD = bytes(b ^ 0x5C for b in range(256))


# CPython's built-in SHA-256 (3.12+: _sha2; before: _sha256), else hashlib's; _operator's compare_digest, else hmac's
try:
    from _sha2 import sha256 as _sha256  # type: ignore[import-not-found]
except ImportError:
    try:
        from _sha256 import sha256 as _sha256  # type: ignore[import-not-found]
    except ImportError:
        from hashlib import sha256 as _sha256
try:
    from _operator import _compare_digest as compare_digest
except ImportError:
    from hmac import compare_digest  # type: ignore[no-redef]


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex."""
    return str(_sha256(data).hexdigest())


def hmac_sha256(key: bytes, msg: bytes) -> bytes:
    """HMAC-SHA256 of ``msg`` under ``key`` (RFC 2104), as ``hmac.new(key, msg, "sha256").digest()``."""
    if len(key) > _BLOCK:
        key = _sha256(key).digest()
    key = key.ljust(_BLOCK, b"\0")
    inner = _sha256(key.translate(_IPAD) + msg).digest()
    return bytes(_sha256(key.translate(_OPAD) + inner).digest())
