"""Adversarial texts for ``stoprule._util.redact``, one family per pattern, each built to hit
that pattern's worst case: many real matches (a fixed one and random ones), many near
matches (the literal, half a match, a match cut short), matches glued together, one match
followed by a long run of the characters its tail accepts, and the literal alone in ordinary
text. Shared by tests/_util/test_redact.py and benchmarks/bench_redaction.py.
"""

from __future__ import annotations

import functools
import json
import random
import re
from pathlib import Path

from stoprule._util import redact as R

MB = 1 << 20
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "secrets"

# (name, a part of its pattern in redact._GATED, a sample match: None = the corpus')
SHAPES: list[tuple[str, str, str | None]] = [
    ("private-key", "-----begin", None),
    ("aws-access-key-id", "AKIA", None),
    ("aws-bedrock-key", "absk", None),
    ("aws-bedrock-api-key", "bedrock-api-key-", "bedrock-api-key-" + "QmVkcm9ja0FQSUtleS1FWEFNUExF"),
    ("github-token", "ghp_", None),
    ("github-fine-grained-pat", "github_pat_", None),
    ("gitlab-pat", "gl", None),
    ("gitlab-runner-token", "gr1348941", "GR1348941" + "aB3dE5fG7hJ9kL1mN3pQ"),
    ("slack-token", "xox", None),
    ("slack-config-token", "xoxe", None),
    ("slack-app-token", "xapp-", None),
    ("slack-webhook", "hooks.slack.com/", None),
    ("stripe-key", "k_live_", None),
    ("openai-anthropic-key", "sk-", None),
    ("google-api-key", "aiza", None),
    ("google-oauth-access-token", "ya29.", None),
    ("google-oauth-client-secret", "gocspx-", "GOCSPX-" + "aB3dE5fG7hJ9kL1mN3pQ5r"),
    ("jwt", "eyj", None),
    ("npm-token", "npm_", None),
    ("huggingface-token", "hf_", None),
    ("huggingface-org-token", "api_org_", "api_org_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wXyZ01"),
    ("digitalocean-token", "_v1_", None),
    ("sendgrid-key", "sg.", None),
    ("twilio-key", "SK", None),
    ("pypi-token", "pypi-", None),
    ("shopify-token", "shp", None),
    ("databricks-token", "dapi", None),
    ("age-secret-key", "age-secret-key-1", None),
    ("telegram-bot-token", ":aa", None),
    ("azure-ad-client-secret", "q~", None),
    ("azure-account-key", "accountkey=", "AccountKey=" + "aB3dE5fG7hJ9kL1mN3pQ5rS7t=="),
    ("azure-shared-access-key", "sharedaccess", "SharedAccessKey=" + "aB3dE5fG7hJ9kL1m"),
    ("azure-sas-signature", "sig=", "sig=" + "aB3dE5fG7hJ9kL1mN3pQ5r%3D"),
    ("curl-user", "-u", None),
    ("mysql-password", "mysql", "mysql -u root -pS3cretPass"),
    ("aws-cli-configure", "configure", None),
    ("sshpass", "sshpass", "sshpass -p S3cretPass"),
    ("cli-flag", "-", "--password S3cretPass"),
    ("bearer-basic-token", "bearer", "Bearer aB3dE5fG7hJ9kL1mN3pQ"),
]

# the patterns outside redact._GATED, and general inputs: (name, {input: repeated unit or text})
_RND = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def _fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _randomized(sample: str, keep: int, rnd: random.Random) -> str:
    """``sample`` with its characters after ``keep`` replaced by random ones of the same kind."""
    tail = [
        rnd.choice("0123456789")
        if c.isdigit()
        else rnd.choice(_RND[:25])
        if c.islower()
        else rnd.choice(_RND[25:49])
        if c.isupper()
        else c
        for c in sample[keep:]
    ]
    return sample[:keep] + "".join(tail)


def _units(size: int, make) -> str:  # noqa: ANN001 - a callable returning the next unit
    out, n = [], 0
    while n < size:
        u = make()
        out.append(u)
        n += len(u)
    return "".join(out)[:size]


@functools.cache
def _corpus() -> tuple[str, ...]:
    return tuple(json.loads(line)["text"] for line in (FIXTURES / "corpus.jsonl").read_text("utf-8").splitlines())


def _sample(pattern: R._Lazy, given: str | None) -> str:
    if given is not None:
        return given
    for text in _corpus():
        m = pattern.compiled().search(text)
        if m:
            return m.group(0)
    raise LookupError(pattern.pattern)


def ordinary(size: int = MB) -> str:
    """Ordinary prose and code (the false-positive corpus), repeated to ``size``."""
    text = "".join(f.read_text(encoding="utf-8") for f in sorted((FIXTURES / "negatives").iterdir())[:6])
    return _fill(text, size)


def families(size: int = MB, only: str | None = None, seed: int = 1) -> dict[str, dict[str, str]]:
    """Pattern name -> {input name: a text of ``size`` characters} (``only``: that pattern's)."""
    rnd = random.Random(seed)
    by_marker = {markers[0]: pattern for markers, pattern, _ in R._GATED if markers}
    prose = ordinary(size)
    out: dict[str, dict[str, str]] = {}
    for name, marker, given in SHAPES:
        if only and name != only:
            continue
        pattern = by_marker.get(marker) or next(p for _, p, _ in R._GATED if marker in p.pattern)
        s = _sample(pattern, given)
        lit = len(marker) if s.lower().startswith(marker.lower()) else 2
        out[name] = {
            "real matches": _fill(s + " ", size),
            "random real matches": _units(size, lambda s=s, lit=lit: _randomized(s, lit, rnd) + " "),
            "glued matches": _fill(s, size),
            "half matches": _fill(s[: max(lit + 1, len(s) // 2)] + " ", size),
            "matches cut short": _fill(s[:-1] + " ", size),
            "one match, long tail": (s + s[-1] * size)[:size],
            "its literal": _fill(s[:lit] + " ", size),
            "its literal in prose": s[:lit] + " " + prose[: size - lit - 1],
        }
    extra: dict[str, dict[str, str]] = {}
    extra["mysql-password"] = {
        '"mysql -p"': _fill("mysql -p", size),
        "-p far from mysql": "mysql\n" + _fill(" -pabc", size - 6),
        "-p on a long mysql line": _fill("mysql" + " -pS3cret" * 30 + "\n", size),
    }
    extra["cli-flag"] = {"-a bbbb": _fill("-a bbbb ", size), "--token": _fill("--token ", size),
                        "a-": _fill("a-", size), "--": _fill("--", size)}  # fmt: skip
    extra["bearer-basic-token"] = {
        "token word": _fill("token abcdefgh ", size),
        "token, then one lower-case word": "token " + "a" * (size - 6),  # its mixed-case test was quadratic
        "token, then one upper-case word": "token " + "A" * (size - 6),
    }
    extra["curl-user"] = {"-u a:bcd": _fill("-u a:bcd ", size)}
    extra["url"] = {
        '"x://y:"': _fill("x://y:", size),
        "real": _fill("https://user:pass@host/ ", size),
        "random passwords": _units(size, lambda: f"https://u:{_randomized('aB3dE5fG7h', 0, rnd)}@h.io/ "),
        "@ run": "a://b:c" + "@" * (size - 7),
        "@a run": "http://u:p" + _fill("@a", size - 10),
    }
    extra["assignment"] = {
        '"a-"': _fill("a-", size), '"a="': _fill("a=", size), '"a:"': _fill("a:", size),
        '"\\"a\\":"': _fill('"a":', size), '"password="': _fill("password=", size), "sig= ": _fill("sig= ", size),
        "pwd=Ab1x": _fill("pwd=Ab1x ", size),
        "random pwd=": _units(size, lambda: f"pwd={_randomized('aB3dE5fG', 0, rnd)} "),
        "password=...": _fill("password=Hunter2-Sup3r\n", size),
        '"password": "..."': _fill('"password": "Hunter2-Sup3r", ', size),
        "key: word": _fill("key: word ", size), "long key": _fill("a" * 200 + "_token=x ", size),
        "password = code": _fill("password = self.password\n", size),  # kept values, past the budget too
        "password=1.1.1...x": _units(size, lambda: f"password={'1.' * 1000}{rnd.randrange(10**6)}x\n"),  # was L^2 each
    }  # fmt: skip
    extra["quoted high-entropy value"] = {
        "random": _units(size, lambda: f'x: "{_randomized("aB3dE5fG7hJ9kL1mN3pQ5rS7", 0, rnd)}" '),
        "low entropy": _fill('x: "' + "ab" * 12 + '" ', size),
    }
    extra["env line high-entropy value"] = {
        "fixed": _fill("k=aB3dE5fG7hJ9kL1mN3pQ5rS7tV9\n", size),
        "random": _units(size, lambda: f"k={_randomized('aB3dE5fG7hJ9kL1mN3pQ5rS7tV9', 0, rnd)}\n"),
        "low entropy": _fill("k=" + "ab" * 14 + "\n", size),
    }
    literals = " ".join(m for markers, _, _ in R._GATED for m in markers) + " AKIA ASIA"
    extra["general"] = {
        "every literal, then prose": (literals + " " + prose)[:size],
        "prose": prose,
        '"@"': "@" * size,
        "surrogates and NUL": _fill("\ud800\x00", size),
        "one long line of word characters": "a" * size,
        "private-key block without an end": _fill("-----BEGIN RSA PRIVATE KEY-----", size),
        '"1."': _fill("1.", size),  # the value tests (a version, a path, a snake_case name) as scans
        '"/a"': _fill("/a", size),
        '"a_"': _fill("a_", size),
    }
    for name, inputs in extra.items():
        if not only or name == only:
            out[name] = {**out.get(name, {}), **inputs}
    return out


TRIVIAL = re.compile(r"\s+")  # the in-run baseline: ``TRIVIAL.sub(" ", text)``, one trivial pattern
