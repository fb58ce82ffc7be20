"""Shared by the blocker tests: a project with the default pack, and the 20 secret shapes."""

from __future__ import annotations

from pathlib import Path

from stoprule.agent.blockers.service import BlockerService

DEFAULT_PACK = Path(__file__).resolve().parent.parent / "policies"

# Every one must be gone from whatever stoprule writes (blockers.md, record, ledger, export, logs).
SECRETS = [
    "password=hunter2-Sup3r",
    "passwd: 'letmein-99x'",
    "token=tok_3f9a8b7c6d5e4f",
    "apiKey=AbCdEf123456GhIj",
    '"api_key": "k-1234567890abcdef"',
    "secret=shh-very-secret-value",
    "client_secret: cs_9f8e7d6c5b4a",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abcdefgh",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7x1y2z3\n-----END RSA PRIVATE KEY-----",
    "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "glpat-xYz123AbC456dEf789gH",
    "xoxb-123456789012-123456789012-AbCdEfGhIjKlMnOp",
    "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "sk-proj-" + "abcdefghijklmnopqrstuvwxyz012345",
    "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV",
    "postgres://admin:Pg-Secret-Pass@db.internal:5432/app",
    "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0" + "==",
    "npm_" + "abcdefghijklmnopqrstuvwxyz0123456789",
]


# the part of each that must not survive (the value, not the key name)
def secret_values() -> list[str]:
    vals = []
    for s in SECRETS:
        for sep in ("=", ": ", " = "):
            if sep in s and not s.startswith(("-----", "DefaultEndpoints", "postgres")):
                s = s.split(sep, 1)[1]
                break
        vals.append(s.strip().strip("'\""))
    out = []
    for v in vals:
        if v.startswith("-----BEGIN"):
            out.append("MIIEpAIBAAKCAQEA7x1y2z3")
        elif v.startswith("postgres://"):
            out.append("Pg-Secret-Pass")
        elif v.startswith("DefaultEndpoints"):
            out.append("Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0")
        elif v.startswith("Bearer "):
            out.append(v.split(" ", 1)[1])
        else:
            out.append(v)
    return out


def make_project(tmp_path: Path, config: str = "") -> BlockerService:
    (tmp_path / ".stoprule").mkdir(exist_ok=True)
    if config:
        (tmp_path / ".stoprule" / "config.yaml").write_text(config)
    return BlockerService(str(tmp_path), policy=str(DEFAULT_PACK))
