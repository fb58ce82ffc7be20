"""What redaction does once its cheap pre-scan (:mod:`stoprule._util.redact`) found a candidate:
judge a value (code, a placeholder, prose, a count, or random?), find the password in a URL and
after ``mysql -p``, apply the judgement budget, and run ``detect-secrets``' plugins. A text with
no candidate never loads it.

On the cold path (tools/import_graph.py) when a text the hook writes holds a candidate: its
imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import redact_core
from stoprule._util.redact_core import _CONCAT, _MARK, _SECRET_KEY, REDACTED, _compile, _cut, _Lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any

__all__: list[str] = []


def _judged_sub(pattern: re.Pattern[str], judge: Any, fallback: re.Pattern[str], secret: int, text: str) -> str:
    """``pattern.sub(judge, text)`` for the first ``JUDGEMENT_BUDGET`` matches; from the next
    one on, ``_cut(fallback, rest, secret)`` (its group ``secret`` covers all ``judge`` may redact)."""
    out: list[str] = []
    done = 0
    budget = redact_core.JUDGEMENT_BUDGET
    for n, m in enumerate(pattern.finditer(text)):
        if n == budget:
            out += [text[done : m.start()], _cut(fallback, text[m.start() :], secret)]
            return "".join(out)
        out += [text[done : m.start()], judge(m)]
        done = m.end()
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


# a URL: its ``://`` (found by a fast search), after a scheme of 1-21 characters that starts a
# word, then up to 2,048 characters (the match starts at ``://``; each look-behind has one width)
_SCHEME_BEFORE = "|".join(rf"(?<=\b[a-z][a-z0-9+.-]{{{k}}}://)" for k in range(21))
_URL = _compile(rf"(?i)://(?:{_SCHEME_BEFORE})[^\s\"'<>`]{{3,2048}}+")
# past the judgement budget: every ``://user:`` loses the rest of its URL, whatever its scheme
_URL_ANY = _compile(r"(://[^\s\"'<>`/@:]{1,2047}+:)([^\s\"'<>`]++)")
_HOST_TAIL = _compile(r"(?<![\w.-])[\w.-]++(?::\d++)?+(?:[/?#]|$)")  # tried at a run's start only: linear

# a value that stands for one: empty, a keyword, a type name, a template, stars (a whole value)
_PLACEHOLDER_BODY = (
    r"(?:|none|null|nil|true|false|undefined|yes|no|on|off|required|optional|string|str|bool|int|any|object"
    r"|changeme|redacted|value|values|val|example|dummy|placeholder|foo|bar|baz|your[_-]?\w*|\*+|x+|\.\.\.|\[redacted\]|<[^>]*>|\$\{?[\w.:-]*\}?|\{\{[^}]*\}\}|%\(?\w*\)?s?|[-_.]+)"
)
_PLACEHOLDER = _compile(rf"(?i)^{_PLACEHOLDER_BODY}$")
# the helpers below judge one value (``match`` at its start): each starts only where a run of
# its characters starts, so a scan over a long text (never made) would stay linear too
_DIGEST = _compile(r"(?i)(?<![0-9a-z:-])(?:(?:sha\d*|md5|blake2[bs]?)[:-])?[0-9a-f-]++$")  # hex digests, UUIDs
_CODE_CHARS = _compile(r"[()\[\]{},;<>]")
_TEMPLATE = _compile(r"%[-#0 +]?\d*[sdrx]|\{\d*\}|\{[A-Za-z_]\w*\}")
_NUMBERS = _compile(r"(?<![\d.:])(?:\d{1,5}+|\d*+[.:][\d.:]*+)$")  # a count or a port; a version, OID or address
_FILE_NAME = _compile(r"(?<![\w-])[\w-]++\.[A-Za-z]{1,5}+$")
_PATH = _compile(r"(?<![\w.@+~/-])(?:~|\.{1,2})?/[\w.@+-]++(?:/[\w.@+-]*+)++$")
_SNAKE = _compile(r"(?<![a-z_])[a-z]++(?:_[a-z]++)++$")
_CODE_REF = _compile(r"^(?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*(?:[(\[].*)?$")
_DB_NAME = _Lazy(r"mysql|mariadb")
_SPACE = _Lazy(r"\s")


def _mysql_passwords(pattern: _Lazy, text: str) -> str:
    """``-pPASS`` starting within 200 characters after ``mysql`` or ``mariadb`` on its line.

    Mentions whose windows touch are chained into one window, and each window is split by the
    pattern in one C call (its every third part is a password): no Python call per match."""
    rx, db, space = pattern.compiled(), _DB_NAME.compiled(), _SPACE.compiled()
    out: list[str] = []
    done = pos = 0
    nl = stop = -1
    while (m := db.search(text, pos)) is not None:
        i, start = m.start(), m.end()
        if nl < i:
            nl = text.find("\n", i)
            nl = len(text) if nl < 0 else nl
        end = min(i + 200, nl)  # the last position a password may start at
        while True:  # a later mention whose window touches this one extends it
            j = max(text.rfind("mysql", i + 1, end + 1), text.rfind("mariadb", i + 1, end + 1))
            if j < 0 or min(j + 200, nl) <= end:
                break
            i, end = j, min(j + 200, nl)
        if stop < end:  # else no space lies in [end, stop): ``stop`` is still the first at or after ``end``
            ws = space.search(text, end)
            stop = len(text) if ws is None else ws.start()  # no password starts in [end + 1, stop]
        begin = max(start - 1, done)  # a password needs a space before it: none starts at ``begin``
        parts = rx.split(text[begin:stop])
        if len(parts) > 1:
            parts[2::3] = [REDACTED] * (len(parts) // 3)
            out += [text[done:begin], *parts]
            done = stop
        pos = i + 1
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def _entropy(text: str) -> float:
    from math import log2

    n = len(text)
    return -sum(c / n * log2(c / n) for c in map(text.count, set(text)))


_LOWER, _UPPER = frozenset("abcdefghijklmnopqrstuvwxyz"), frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGIT = frozenset("0123456789")
_ALNUM = _LOWER | _UPPER | _DIGIT
_C_LOG_C: list[float] = []  # c log2 c for the counts of a value (made on first use: most texts need none)


def _c_log_c() -> list[float]:
    if not _C_LOG_C:
        from math import log2

        _C_LOG_C.extend([0.0] + [c * log2(c) for c in range(1, 1025)])
    return _C_LOG_C


def _classes(text: str, chars: set[str] | frozenset[str] | None = None) -> int:
    """How many of lower case ASCII, upper case ASCII, digits and other characters ``text`` holds."""
    chars = set(text) if chars is None else chars
    return (
        (not chars.isdisjoint(_LOWER))
        + (not chars.isdisjoint(_UPPER))
        + any(c.isdecimal() for c in chars)
        + (not chars <= _ALNUM)
    )


def _high_entropy(value: str) -> bool:
    """A value of any key that looks like a random credential (not code, a digest or a sentence)."""
    n = len(value)
    if n < 20 or n > 1024:
        return False
    chars = frozenset(value)
    if len(chars) < 16 or " " in chars:  # entropy >= 4 needs 16 symbols
        return False
    digits = chars & _DIGIT if value.isascii() else {c for c in chars if c.isdecimal()}
    if not digits or len(digits) == 1 and value.count(next(iter(digits))) < 2:
        return False  # under two digits: code (``socket._GLOBAL_DEFAULT_TIMEOUT``), not random
    if _DIGEST.match(value) or _PATH.match(value) or _CODE_CHARS.search(value):
        return False
    if (not chars.isdisjoint(_LOWER)) + (not chars.isdisjoint(_UPPER)) + 1 + (not chars <= _ALNUM) < 3:
        return False
    from math import log2

    c_log_c = _c_log_c()
    rest = n - len(chars) + 1  # entropy is at least that of all repeats on one character
    if log2(n) - c_log_c[rest] / n > 4.0 + 1e-9:
        return True
    entropy = log2(n) - sum(map(c_log_c.__getitem__, map(value.count, chars))) / n
    return entropy >= 4.0 if abs(entropy - 4.0) > 1e-9 else _entropy(value) >= 4.0  # the exact sum at the edge


def _secretish(value: str) -> bool:
    """A bare value that plausibly is a password or token (not an English word)."""
    return len(value) >= 16 or _classes(value) >= 2 and not value.isalpha()


def _tokenish(value: str) -> bool:
    """After ``Bearer``/``Basic``/``Token``: a credential, not a word or a file name."""
    if _FILE_NAME.match(value):
        return False
    return any(c.isdigit() for c in value) or "=" in value or (value != value.lower() and value != value.upper())


def _keep(key: str, val: str, named: bool, sep: str, text: str, end: int) -> bool:
    """Whether the value of an assignment is not a secret (code, a placeholder, prose, a count)."""
    quoted = val[:1] in ("'", '"')
    inner = val[1:-1] if quoted else val
    if inner.startswith(_MARK) or _PLACEHOLDER.match(inner.strip()) or _NUMBERS.match(inner):
        return True  # a placeholder, a count, a version, an OID or an address
    if not named:
        return not (quoted and _high_entropy(inner))
    if quoted:
        if inner != inner.strip() and inner.strip().isalpha() or _TEMPLATE.search(inner):
            return True  # a fragment or a template of a string being built ("Basic " + ..., "%s:%s")
        if _CONCAT.match(text, end):
            return True  # 'get' + name: an expression
        return inner.count(" ") >= 3 and "phrase" not in key.lower()  # a sentence (a label, a prompt)
    bare = inner.rstrip("`'\".,;:)")
    if _NUMBERS.match(bare):
        return True  # a port, a count, a flag
    if inner[:1] in "([{%*.&|!<>@`" or bare.isupper() and bare.replace("_", "").isalpha():
        return True  # an expression or a PLACEHOLDER, not a value
    if " " in sep and "*" in inner:
        return True  # x = 2*y
    plain_name = " " in sep and not any(c.isdigit() for c in inner)  # ``x = y``
    if _CODE_REF.match(inner) and (
        any(c in inner for c in ".([") or _SECRET_KEY.search(inner) or _SNAKE.match(inner) or plain_name
    ):
        return True  # a variable, attribute or call (``x = y``): code, not a value
    # prose ("token: the next word") unless the value ends its line (YAML)
    return ":" in sep and not _secretish(inner) and text[end : end + 1] not in ("", "\n", "\r")


def _url(m: re.Match[str]) -> str:
    url = m.group(0)
    scheme_end = url.index("://") + 3
    rest = url[scheme_end:]
    colon = rest.find(":")
    if colon <= 0 or "/" in rest[:colon] or "@" in rest[:colon]:
        return url
    at = -1  # the last '@' followed by a host: the password may hold '@', '/' or '#'
    i = rest.rfind("@")
    while i > colon:
        if _HOST_TAIL.match(rest, i + 1):
            at = i
            break
        i = rest.rfind("@", colon, i)
    if at < 0:
        return url
    password = rest[colon + 1 : at]
    if not password or password.startswith(_MARK) or _PLACEHOLDER.match(password):
        return url
    return url[:scheme_end] + rest[: colon + 1] + REDACTED + rest[at:]


def _urls(text: str) -> str:
    return _judged_sub(_URL, _url, _URL_ANY, 2, text)


def _group(index: int, test: Any) -> Any:
    def sub(m: re.Match[str]) -> str:
        value = m.group(index)
        if value.startswith(_MARK) or _PLACEHOLDER.match(value) or (test is not None and not test(m)):
            return m.group(0)
        s, e = m.start(index) - m.start(), m.end(index) - m.start()
        whole = m.group(0)
        return whole[:s] + REDACTED + whole[e:]

    return sub


def _judged_group(index: int, test: Any, pattern: _Lazy, text: str) -> str:
    """``pattern.sub`` of a command line's credential (its group ``index``; ``test``: what a
    match must pass) within the judgement budget; past it, every match's secret (its last group,
    the part before it kept) is redacted."""
    return _judged_sub(pattern.compiled(), _group(index, test), pattern.compiled(), 2, text)


# words of code, any string (scan_line skips the entropy filter), public addresses: not credentials
_DS_NOISY = ("KeywordDetector", "IPPublicDetector", "Base64HighEntropyString", "HexHighEntropyString")


def _detect_secrets_values(text: str) -> list[str]:
    """The secrets ``detect-secrets``' plugins find in ``text`` (longest first)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings

    names = sorted(c.__name__ for c in get_mapping_from_secret_type_to_class().values())
    plugins = [{"name": n} for n in names if n not in _DS_NOISY]  # its credential-shape detectors
    found: set[str] = set()
    with transient_settings({"plugins_used": plugins}):
        for line in text.splitlines()[:10_000]:
            if len(line) <= 10_000:
                found.update(s.secret_value for s in scan_line(line) if s.secret_value)
    # its keyword plugin also reports code (``password = user``): keep what looks like a credential
    keep = (v for v in found if len(v) >= 8 and v not in REDACTED and _tokenish(v) and not _SNAKE.match(v))
    return sorted(keep, key=len, reverse=True)
