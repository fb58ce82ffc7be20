"""Secrets become ``[REDACTED]`` before a blocker or report is written, recorded, exported or logged.

Two kinds of pattern: ``key=value`` / ``key: value`` assignments whose key names a
secret (the key is kept, the value replaced), and the shapes of well-known credentials
wherever they appear (bearer tokens, private-key blocks, cloud and service keys, JWTs,
credentials in URLs). Redaction is deliberately greedy: a false positive costs a word
of a question, a false negative leaks a key into a file people share.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["REDACTED", "redact", "redact_obj"]

REDACTED = "[REDACTED]"

_KEYS = (
    r"password|passwd|pwd|pass|passphrase|token|access[_-]?token|refresh[_-]?token|auth[_-]?token|id[_-]?token"
    r"|api[_-]?key|apikey|x-api-key|secret|client[_-]?secret|secret[_-]?key|private[_-]?key|access[_-]?key"
    r"|aws[_-]?secret[_-]?access[_-]?key|account[_-]?key|accountkey|credentials?|session[_-]?token|sas[_-]?token"
)
# key, an optional closing quote of a JSON/YAML key, = or :, then a quoted or bare value
_ASSIGN = re.compile(
    rf"(?i)(?P<key>\b[\w.-]*(?:{_KEYS}))(?P<q>[\"']?)(?P<sep>\s*[:=]\s*)"
    r"(?!\[REDACTED\])(?P<val>\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&\"'}\]]+)"
)
_SHAPES = [
    re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)", re.S
    ),
    re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}"),  # Authorization: Bearer/Basic ...
    re.compile(r"\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),  # GitHub tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b"),  # GitLab
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),  # Slack
    re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+"),
    re.compile(r"\b(sk|rk|pk)_(live|test)_[A-Za-z0-9]{16,}\b"),  # Stripe
    re.compile(r"\bsk-(ant-|proj-)?[A-Za-z0-9_-]{20,}\b"),  # OpenAI / Anthropic style
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),  # Google API key
    re.compile(r"\bya29\.[0-9A-Za-z_-]{20,}\b"),  # Google OAuth access token
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"),  # JWT
    re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"),
    re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"),  # Hugging Face
    re.compile(r"\bdop_v1_[a-f0-9]{64}\b"),  # DigitalOcean
    re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}\b"),  # SendGrid
    re.compile(r"\bSK[0-9a-fA-F]{32}\b"),  # Twilio
    re.compile(r"(?i)\bAccountKey=[A-Za-z0-9+/=]{20,}"),  # Azure storage connection strings
    re.compile(r"(?i)\bSharedAccessSignature=[^\s;]+|\bsig=[A-Za-z0-9%+/=]{20,}"),  # Azure SAS
]
_URL_CREDS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^\s:/@]+):([^\s/@]+)@")


def redact(text: str) -> str:
    """``text`` with every secret it carries replaced by ``[REDACTED]``."""
    if not text:
        return text
    out = _URL_CREDS.sub(lambda m: f"{m.group(1)}{m.group(2)}:{REDACTED}@", text)
    for shape in _SHAPES:
        out = shape.sub(REDACTED, out)
    return _ASSIGN.sub(lambda m: f"{m.group('key')}{m.group('q')}{m.group('sep')}{REDACTED}", out)


def redact_obj(value: Any) -> Any:
    """A copy of a JSON-like value with every string redacted (keys of objects too)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k) if isinstance(k, str) else k: redact_obj(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_obj(v) for v in value]
    return value
