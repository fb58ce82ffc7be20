"""Secrets become ``[REDACTED]`` before anything is written to disk, recorded, exported or echoed.

Three kinds of pattern, all linear-time (every pattern starts at a literal, with any
word-boundary test after it so the regex engine finds it by a fast search, or at the start
of a run guarded by a look-behind; every repetition is possessive or bounded, so no input
makes the engine backtrack over it twice). Where matches can be dense the tests are in the
pattern and one ``split`` cuts the text (no Python call per match); the decisions left to
Python (an assignment's value, an entropy, a URL's password) are cached per text and
bounded by ``JUDGEMENT_BUDGET`` per kind: past it, the rest of the text's candidates of that
kind are redacted unjudged by one ``split`` (more redaction, never less):

- the shapes of well-known credentials wherever they appear (cloud and service keys,
  private-key blocks, JWTs, bearer/basic tokens, Slack/GitHub/GitLab/Stripe/OpenAI/... keys);
- credentials on command lines and in URLs (``scheme://user:pass@host``, ``curl -u u:p``,
  ``mysql -pPASS``, ``aws configure set ... VALUE``, ``--password VALUE``);
- ``key = value`` / ``key: value`` / ``"key": "value"`` assignments whose key names a secret
  (the key is kept, the value replaced), and quoted high-entropy values of any key.

``redact_obj`` applies it to every string of a JSON-like value (keys too). With
``STOPRULE_REDACT_DETECT_SECRETS=1`` (or :func:`use_detect_secrets`) and the optional
``detect-secrets`` package installed, its plugins run as well, on top of these patterns.
Redaction is deliberately greedy where a value looks like a secret: a false positive costs
a word, a false negative leaks a key into a file people share.

What runs once the cheap pre-scan found a candidate (judging a value, a URL's password,
``mysql -p``, ``detect-secrets``) is :mod:`stoprule._util.redact_judge`, loaded only then; what
both share is :mod:`stoprule._util.redact_core`.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule._util import redact_core
from stoprule._util.redact_core import _CONCAT, _SECRET_KEY, REDACTED, _compile, _cut, _Lazy, _re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["REDACTED", "detect_secrets_enabled", "redact", "redact_obj", "use_detect_secrets"]

MAX_DEPTH = 64


_DOTALL = 16  # re.S (re itself is imported when a pattern is first compiled)


_REST_OF_LINE = r"(?:[^\r\n]++|\r(?!\n))++"  # a value never spans lines: all up to the line's end


# ---------------------------------------------------------------- credential shapes
_B64 = r"A-Za-z0-9+/"
_SHAPES: list[_Lazy] = [
    _Lazy(
        r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY"
        r"(?: BLOCK)?-----|\Z)",
        _DOTALL,
    ),  # fmt: skip
    _Lazy(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)(?<!\w....)[A-Z0-9]{16}(?![A-Z0-9])"),
    _Lazy(r"ABSK(?<!\w....)[A-Za-z0-9+/]{100,300}+={0,2}"),  # Amazon Bedrock API key
    _Lazy(r"bedrock-api-key-(?<!\w................)[A-Za-z0-9+/=_-]{16,}+"),
    _Lazy(r"gh(?<!\w..)[pousr]_[A-Za-z0-9]{30,255}+"),  # GitHub
    _Lazy(r"github_pat_(?<!\w...........)[A-Za-z0-9_]{20,255}+"),
    _Lazy(r"gl(?<!\w..)(?:pat|ptt|rt|dt|ft|oas|cbt|imt|soat|agent)-[A-Za-z0-9_.-]{16,}+"),  # GitLab
    _Lazy(r"GR1348941(?<!\w.........)[A-Za-z0-9_-]{20}"),
    _Lazy(r"xox(?<!\w...)[a-z]-[A-Za-z0-9-]{10,}+"),  # Slack
    _Lazy(r"xoxe(?<!\w....)(?:\.xox[a-z])?-\d-[A-Za-z0-9-]{10,}+"),
    _Lazy(r"xapp-(?<!\w.....)\d-[A-Za-z0-9-]{10,}+"),
    _Lazy(r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/+_-]{8,}+"),
    _Lazy(r"[srp]k_(?<!\w...)(?:live|test|prod)_[A-Za-z0-9]{16,}+"),  # Stripe
    _Lazy(
        r"sk-(?<!\w...)(?:ant-[a-z]{2,10}\d{0,3}-|proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}+"
    ),  # OpenAI/Anthropic
    _Lazy(r"AIza(?<!\w....)[A-Za-z0-9_-]{35}"),  # Google API key (may end in '-')
    _Lazy(r"ya29(?<!\w....)\.[A-Za-z0-9_-]{20,}+"),  # Google OAuth access token
    _Lazy(r"GOCSPX-(?<!\w.......)[A-Za-z0-9_-]{20,}+"),  # Google OAuth client secret
    _Lazy(r"eyJ(?<!\w...)[A-Za-z0-9_-]{6,}+\.[A-Za-z0-9_-]{2,}+(?:\.[A-Za-z0-9_-]*+)?"),  # JWT: 2 or 3 parts, alg none
    _Lazy(r"npm_(?<!\w....)[A-Za-z0-9]{36}"),
    _Lazy(r"hf_(?<!\w...)[A-Za-z0-9]{30,}+"),  # Hugging Face
    _Lazy(r"api_org_(?<!\w........)[A-Za-z0-9]{30,}+"),
    _Lazy(r"do(?<!\w..)[opr]_v1_[a-f0-9]{64}"),  # DigitalOcean
    _Lazy(r"SG(?<!\w..)\.[A-Za-z0-9_-]{16,}+\.[A-Za-z0-9_-]{16,}+"),  # SendGrid
    _Lazy(r"SK(?<!\w..)[0-9a-fA-F]{32}\b"),  # Twilio API key
    _Lazy(r"pypi-AgEIcHlwaS5vcmc(?<!\w....................)[A-Za-z0-9_-]{50,}+"),
    _Lazy(r"shp(?<!\w...)(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),  # Shopify
    _Lazy(r"dapi(?<!\w....)[a-f0-9]{32}(?:-\d)?"),  # Databricks
    _Lazy(r"AGE-SECRET-KEY-1(?<!\w................)[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _Lazy(r"\d(?<!\w\d)\d{7,9}:AA[A-Za-z0-9_-]{32,33}"),  # Telegram bot token
    _Lazy(r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}"),  # Azure AD client secret
    # Azure storage connection strings, case-insensitive but for the first letter (tested in both
    # cases, and U+017F that folds to s), so the regex engine finds it by a fast search
    _Lazy(rf"[aA](?i:ccountKey)(?<!\w..........)=(?i:[{_B64}=]){{20,}}+"),
    _Lazy(r"[sS\u017f](?i:haredAccess)(?<!\w............)(?i:Key|Signature)=[^\s;\"']{8,}+"),
    _Lazy(r"sig=(?<![\w-]sig=)[A-Za-z0-9%+/=]{20,}+"),  # Azure SAS
]

# ---------------------------------------------------------------- command lines and URLs


# the placeholder words (redact_judge's _PLACEHOLDER_BODY) grouped by their first character,
# which is tested case-sensitively (an ASCII letter in either case): the regex engine skips an
# alternative whose first character differs in one step instead of comparing it
# case-insensitively (a value after ``-u user:``, ``-p``, ``--token`` or ``Bearer`` is tested
# against all of them). Where Unicode case folding maps a
# character to an ASCII letter (U+017F, U+0131, U+0130) the value is not a placeholder: redacted.
_PLACEHOLDER_FIRST = (
    r"(?-i:[nN](?i:one|ull|il|o)|[tT](?i:rue)|[fF](?i:alse|oo)|[uU](?i:ndefined)|[yY](?i:es|our[_-]?\w*)"
    r"|[oO](?i:n|ff|ptional|bject)|[rR](?i:equired|edacted)|[sS](?i:tr(?:ing)?)|[bB](?i:ool|ar|az)|[iI](?i:nt)"
    r"|[aA](?i:ny)|[cC](?i:hangeme)|[vV](?i:al(?:ues?)?)|[eE](?i:xample)|[dD](?i:ummy)|[pP](?i:laceholder)|[xX]+"
    r"|\*+|\.\.\.|\[(?i:redacted)\]|<[^>]*>|\$\{?[\w.:-]*\}?|\{\{[^}]*\}\}|%\(?\w*\)?(?i:s)?|[-_.]+)"
)


# the first two characters of each (one of a symbol, or of ``x``): most values fail here in a
# few steps, before the words are tried
_PLACEHOLDER_START = (
    r"[bB][oOaA]|[nN][oOuUiI\u0131\u0130]|[tT][rR]|[fF][aAoO]|[uU][nN]|[yY][eEoO]|[oO][nNfFpPbB]|[rR][eE]|[sS][tT]"
    r"|[iI][nN]|[aA][nN]|[cC][hH]|[vV][aA]|[eE][xX]|[dD][uU]|[pP][lL]|[xX]|[*.\[<$\{%_-]"
)


def _plain_value(cls: str, cap: int) -> str:
    """A look-ahead refusing a value (a run of ``cls``) already redacted, or a placeholder of
    at most ``cap`` characters (a longer one is redacted)."""
    return (
        rf"(?!\[REDACTED)(?:(?![ntfuyorsbiacvedpxNTFUYORSBIACVEDPX*.\[<$\{{%_-])|(?!{_PLACEHOLDER_START})"
        rf"|(?!(?={cls}{{1,{cap}}}+(?!{cls})){_PLACEHOLDER_FIRST}(?!{cls})))"
    )


_MYSQL = _Lazy(r"(-(?<!\S-)p)" + _plain_value(r"[^\s'\"`]", 256) + r"([^\s'\"`,;)-][^\s'\"`]{0,255}+)")


def _mysql(pattern: _Lazy, text: str) -> str:
    """``-pPASS`` after ``mysql`` or ``mariadb`` (the text holds one): :mod:`.redact_judge`'s."""
    from stoprule._util.redact_judge import _mysql_passwords

    return _mysql_passwords(pattern, text)


# (pattern, group holding the secret, a test the match must pass)
_CLI: list[tuple[_Lazy, int, Any]] = [
    (
        _Lazy(r"([aA](?i:ws)(?<!\w...)\s++(?i:configure)\s++(?i:set)\s++[\w.-]{0,64}+\s++)(\S{4,}+)"),
        2,
        lambda m: _re().search(r"(?i)secret|token|key", m.group(1)) is not None,
    ),
    (_Lazy(r"(sshpass(?<!\w.......)\s++-p\s*+['\"]?)([^\s'\"]{1,256}+)"), 2, None),
]
# (the part kept)(the secret), nothing after it: ``pattern.split`` cuts a text into kept text
# and secrets in one C call, and every third part is replaced (no Python call per match); the
# kept part is atomic (``(?>...)``): when what follows fails, no shorter prefix is retried
_CURL = _Lazy(
    r"(-(?>(?<![\w-]-)(?:u|-user)(?:\s++|=)['\"]?[^\s:'\"]{1,128}+:))"
    + _plain_value(r"[^\s'\"]", 256)
    + r"([^\s'\"]{1,256}+)"
)
_FLAG = _Lazy(
    r"(-(?>(?<![\w-]-)-?[\w-]{1,48}+(?![\w-])(?<=[dentyDENTY])(?i:(?<=token)|(?<=passwd|secret|apikey)|(?<=api-key)|(?<=password)"
    r"|(?<=accesskey)|(?<=passphrase|access-key))(?:\s++|=)['\"]?))(?=[^\s'\"]{4})(?![-$<{\[])(?!(?i:bearer|basic|digest)\s)"
    + _plain_value(r"[^\s'\"]", 512)
    + r"([^\s'\"]{4,512}+)"
)  # --password VALUE, --api-key=VALUE (after ``--token Bearer`` the next pattern's turn)
_TOKEN_CHARS = r"[A-Za-z0-9._~+/=-]"
_TOKEN_RUN = r"[A-Za-z0-9._~+/=\u0130\u0131\u017f\u212a-]"  # _TOKEN_CHARS case-insensitive: 4 letters fold to ASCII
_AUTH = _Lazy(  # its first letter found by a fast search (case-sensitive: no letter outside ASCII folds to b, t, d)
    r"([btdBTD](?>(?<!\w.)(?i:earer|asic|oken|igest)\s++))"
    rf"(?={_TOKEN_RUN}{{8}})(?![\w-]+\.[A-Za-z]{{1,5}}(?!{_TOKEN_CHARS}))"  # a file name, not a token
    r"(?=[A-Za-z._~+/-]*+[0-9=]|[a-z0-9._~+/=-]*+[A-Z][A-Z0-9._~+/=-]*+[a-z]|[A-Z0-9._~+/=-]*+[a-z][a-z0-9._~+/=-]*+[A-Z])"
    + _plain_value(_TOKEN_RUN, 1 << 20)
    + rf"({_TOKEN_RUN}{{8,}}+)"
)  # "token generation": a word, not a token


def _split_sub(pattern: _Lazy, text: str) -> str:
    return _cut(pattern.compiled(), text)


# ---------------------------------------------------------------- key = value assignments
# a key ending like a secret's name, then its separator (matched on ASCII-lower-cased text: a
# case-sensitive alternation of literals lets the regex engine skip most positions)
_NAMED_HEAD = (
    r"(?:p(?:ass(?:wd)?|wd|hrase)|word|s(?:ecrets?|ession_?id|ig|as)|token|key|a(?:uth|ture)|zation|entials?|_base)"
    r"(Q[\"']?)(SEP[ \t]*+(?::=|=>|:(?!=)|=(?![=>]))[ \t]*+)"
    r"(?=[^\s,;&}\])<>])"  # a value follows (_VALUE); one separator fits, so none is retried shorter
)
_NAMED = _compile(_NAMED_HEAD.replace("(Q", "(?P<q>").replace("(SEP", "(?P<sep>"))
# past the judgement budget: all after such a key to the end of its line (a key inside a kept
# value may have a value reaching past that one, so no shorter span is safe), on the text
# itself with ASCII case folded (what ``_NAMED`` finds on the lower-cased text, or more)
_NAMED_REST = _compile(rf"(?ai)({_NAMED_HEAD.replace('(Q', '(?:').replace('(SEP', '(?:')})({_REST_OF_LINE})")
# any separator before a quoted token-like value of 20+ characters (high entropy?)
_QUOTED_HEAD = r"(?::=?|=>?)[ \t]*+(?=[\"'][A-Za-z0-9+/=_.~-]{20,1024}+[\"'])"
_QUOTED = _compile(_QUOTED_HEAD)
_QUOTED_REST = _compile(rf"({_QUOTED_HEAD})({_REST_OF_LINE})")  # past the budget: as _NAMED_REST
_QUOTED_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_.~-"
_QUOTES_READ = 64  # quotes looked at before leaving it to _QUOTED itself


def _quoted_possible(text: str) -> bool:
    """Whether ``_QUOTED`` can match ``text``: a quote after a separator (``:``, ``=``, ``=>``,
    then spaces or tabs) and before 20 of its token characters. Read without a regex: the text
    of a stop (an ``ls`` error quoting a long path, say) mostly has none, and needs no compile."""
    seen = 0
    for q in ('"', "'"):
        i = text.find(q)
        while i >= 0:
            seen += 1
            if seen > _QUOTES_READ:
                return True
            run = text[i + 1 : i + 21]
            if len(run) == 20 and not run.strip(_QUOTED_CHARS):
                j = i - 1
                while j >= 0 and text[j] in " \t":
                    j -= 1
                if j >= 0 and text[j] in ":=>":
                    return True
            i = text.find(q, i + 1)
    return False


# an env/ini line whose whole bare value looks random (``KEY=...`` with any key name)
_LINE_VALUE = _compile(
    r"(?m)^([ \t]*+(?:export[ \t]++)?[A-Za-z0-9_.-]{1,128}+[ \t]*+[:=][ \t]*+)([^\s\"'#]{20,1024}+)([ \t]*+\r?)$"
)
_KEY_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_ASCII_LOWER = str.maketrans({chr(c): chr(c + 32) for c in range(65, 91)})
_VALUE = _compile(r"\"[^\"\n]{0,2048}+\"|'[^'\n]{0,2048}+'|[^\s,;&\"'}\])<>]{1,2048}+")
_COUNT_KEY = _compile(
    r"(?i)tokens$|tokens?[_-]?(?:count|limit|budget|usage|len|length|size|type|file|path|url"
    r"|endpoint|uri|name|id|ttl|expir\w*)$|max[_-]?tokens?|num[_-]?tokens?|tokeni[sz]"
)


def _ascii_lower(text: str) -> str:
    """``text`` with its ASCII letters lower-cased, every other character kept (same offsets).

    ``str.lower`` is a fast C loop and maps no other character to ASCII or to two characters
    but U+0130 and U+212A; ``str.translate`` is the slow exact path for text holding them."""
    if text.isascii() or "\u0130" not in text and "\u212a" not in text:
        return text.lower()
    return text.translate(_ASCII_LOWER)


def _assignments(text: str) -> str:
    """Redact the values of ``key = value`` assignments: each value read at most once."""
    budget = redact_core.JUDGEMENT_BUDGET  # one budget, read where the judgements read it too
    out: list[str] = []
    done = 0
    secret_key: dict[str, bool] = {}  # a long text repeats its keys and values: each is judged once
    kept: dict[tuple[str, str, str, str, bool], bool] = {}
    low = _ascii_lower(text).replace("[redacted]", "[--------]")  # same length and offsets as ``text``
    keyed = [w for w in _NAMED_WORDS if w in low]  # else no key names a secret: _NAMED is not even compiled
    # (no key ends within a redaction: its letters are skipped)
    for n, m in enumerate(_NAMED.finditer(low) if keyed else ()):
        if m.start() < done:
            continue
        if n >= budget:
            out += [text[done : m.start()], _cut(_NAMED_REST, text[m.start() :])]
            done = len(text)
            break
        head = text[max(0, m.start() - 128) : m.start()]
        begin = m.start() - (len(head) - len(head.rstrip(_KEY_CHARS)))
        if begin > 0 and text[begin - 1] in _KEY_CHARS:
            continue  # a key of more than 128 characters: not a name
        key = text[begin : m.start("q")]
        named = secret_key.get(key)
        if named is None:
            named = secret_key[key] = _SECRET_KEY.search(key.lstrip("-.")) is not None and not _COUNT_KEY.search(key)
        v = _VALUE.match(text, m.end()) if named else None
        if v is None:
            continue
        val, end, sep = v.group(0), v.end(), m.group("sep")
        quoted = val[:1] in ("'", '"')
        seen = (key, val, sep, text[end : end + 1], quoted and _CONCAT.match(text, end) is not None)  # all _keep reads
        keep = kept.get(seen)
        if keep is None:
            from stoprule._util.redact_judge import _keep

            keep = kept[seen] = _keep(key, val, True, sep, text, end)
        if keep:
            continue
        out += [text[done : m.end()], f"{val[0]}{REDACTED}{val[-1]}" if quoted else REDACTED]
        done = v.end()
    if out:
        out.append(text[done:])
        text = "".join(out)
    out, done = [], 0
    judged: dict[str, bool] = {}

    def _random(value: str) -> bool:
        high = judged.get(value)
        if high is None:
            from stoprule._util.redact_judge import _high_entropy

            high = judged[value] = _high_entropy(value)
        return high

    if ("\n" in text or len(text) <= 1100) and _line_value_possible(text):
        from stoprule._util.redact_judge import _judged_sub

        text = _judged_sub(
            _LINE_VALUE,
            lambda m: m.group(0) if not _random(m.group(2)) else m.group(1) + REDACTED + m.group(3),
            _LINE_VALUE,
            2,
            text,
        )
    quotes = ('"' in text or "'" in text) and _quoted_possible(text)
    for n, m in enumerate(_QUOTED.finditer(text) if quotes else ()):
        if m.start() < done:
            continue
        if n >= budget:
            out += [text[done : m.start()], _cut(_QUOTED_REST, text[m.start() :])]
            done = len(text)
            break
        v = _VALUE.match(text, m.end())
        if v is None or not _random(v.group(0)[1:-1]):
            continue
        out += [text[done : m.end()], f"{v.group(0)[0]}{REDACTED}{v.group(0)[-1]}"]
        done = v.end()
    if out:
        out.append(text[done:])
        text = "".join(out)
    return text


# a literal of each alternative of _NAMED_HEAD: a key that names a secret holds one (lower case)
_NAMED_WORDS = ("pass", "pwd", "phrase", "word", "secret", "sessionid", "session_id", "sig", "sas", "token", "key",
                "auth", "ature", "zation", "ential", "_base")  # fmt: skip


def _line_value_possible(text: str) -> bool:
    """Whether a line of ``text`` could be one _LINE_VALUE matches (a test before compiling it):
    after its first ``:`` or ``=`` (a key holds neither), 20 or more characters that are neither
    space, quote nor ``#``, up to the line's end."""
    if len(text) > 1 << 16:
        return True  # the regex engine's scan costs less than this one
    for line in text.split("\n"):
        cut = [i for i in (line.find(":"), line.find("=")) if i >= 0]
        value = line[min(cut) + 1 :].lstrip(" \t").rstrip(" \t\r") if cut else ""
        if len(value) >= 20 and not any(c.isspace() or c in "\"'#" for c in value):
            return True
    return False


_detect_secrets: bool | None = None


def use_detect_secrets(enabled: bool | None = True) -> bool:
    """Switch the optional ``detect-secrets`` pass on or off (None: from the environment);
    returns whether it is on (False when the package is not installed)."""
    global _detect_secrets
    if enabled is None:
        enabled = os.environ.get("STOPRULE_REDACT_DETECT_SECRETS", "") not in ("", "0", "false", "no")
    if enabled:
        try:
            import detect_secrets  # noqa: F401
        except ImportError:
            enabled = False
    _detect_secrets = enabled
    _MEMO.clear()
    return enabled


def detect_secrets_enabled() -> bool:
    return use_detect_secrets(None) if _detect_secrets is None else _detect_secrets


def _markers(pattern: _Lazy) -> tuple[str, ...]:
    """Literal strings one of which every match contains: a pattern is compiled and run only
    on text holding one (a C substring search, so most patterns cost nothing on most text, and
    a short-lived process compiles only the patterns its texts may need). A marker in lower case
    is looked for in the lower-cased text, any other as it is written."""
    src = pattern.pattern
    for literal, markers in _MARKERS:
        if literal in src:
            return markers
    return ()


_MARKERS: list[tuple[str, tuple[str, ...]]] = [
    ("PRIVATE KEY", ("-----begin",)),
    ("A3T[A-Z0-9]|AKIA", ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA", "A3T")),
    ("ABSK", ("absk",)), ("bedrock-api", ("bedrock-api-key-",)),
    ("[pousr]_", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")), ("github_pat_", ("github_pat_",)), ("(?:pat|ptt", ("gl",)),
    ("GR1348941", ("gr1348941",)),
    ("xox(?<!\\w...)[a-z]-", ("xox",)), ("xoxe", ("xoxe",)), ("xapp-", ("xapp-",)),
    ("hooks\\.slack", ("hooks.slack.com/",)),
    ("(?:live|test|prod)_", ("k_live_", "k_test_", "k_prod_")), ("(?:ant-[a-z]", ("sk-",)), ("AIza", ("aiza",)),
    ("ya29", ("ya29.",)), ("GOCSPX", ("gocspx-",)), ("eyJ", ("eyj",)), ("npm_", ("npm_",)), ("hf_", ("hf_",)),
    ("api_org_", ("api_org_",)), ("[opr]_v1", ("_v1_",)), ("SG(?<", ("sg.",)), ("SK(?<", ("SK",)),
    ("pypi-", ("pypi-",)), ("shp(?<", ("shp",)), ("dapi", ("dapi",)), ("AGE-SECRET", ("age-secret-key-1",)),
    (":AA", (":aa",)), ("Q~", ("q~",)), ("ccountKey", ("accountkey=",)), ("haredAccess", ("sharedaccess",)),
    ("sig=", ("sig=",)), ("configure", ("configure",)),
    ("sshpass", ("sshpass",)),
]  # fmt: skip


def _sub(repl: Any) -> Any:
    return lambda pattern, text: pattern.sub(repl, text)


def _judged(index: int, test: Any) -> Any:
    """How a gate applies a command line's credential pattern (its group ``index`` the secret,
    ``test`` what a match must pass): judged within the budget (:mod:`.redact_judge`)."""

    def apply(pattern: _Lazy, text: str) -> str:
        from stoprule._util.redact_judge import _judged_group

        return _judged_group(index, test, pattern, text)

    return apply


# a flag's name ends in one of these, in lower case, or holds a letter that folds to an ASCII one
# (U+017F, U+0131, and U+0130 whose lower case holds U+0307; U+212A's is k)
_FLAG_NAMES = ("token", "passw", "secret", "apikey", "api-key", "accesskey", "access-key", "passphrase", "\u017f",
               "\u0131", "\u0307")  # fmt: skip
# (literals one of which a match holds, pattern, how it rewrites a text), in the order they run
_GATED: list[tuple[tuple[str, ...], _Lazy, Any]] = [
    *((_markers(p), p, _sub(REDACTED)) for p in _SHAPES),
    (("-u", "--user"), _CURL, _split_sub),
    (("mysql", "mariadb"), _MYSQL, _mysql),
    *((_markers(p), p, _judged(g, t)) for p, g, t in _CLI),
    (_FLAG_NAMES, _FLAG, _split_sub),
    (("bearer", "basic", "token", "digest"), _AUTH, _split_sub),
]


# _GATED with each entry's markers split: those looked for in the lower-cased text, and the others
_GATES = [
    (tuple(m for m in markers if m.islower()), tuple(m for m in markers if not m.islower()), pattern, apply)
    for markers, pattern, apply in _GATED
]
# every marker at once: most texts hold none, and one flat scan tells (a fraction of the gates' cost)
_ANY_LOWER = tuple(sorted({m for lower, _, _, _ in _GATES for m in lower}))
_ANY_EXACT = tuple(sorted({m for _, exact, _, _ in _GATES for m in exact}))
_UNGATED = any(not (lower or exact) for lower, exact, _, _ in _GATES)
_MEMO: dict[str, str] = {}  # short texts already redacted (a stop's log line repeats its field names)
MEMO_MAX, MEMO_TEXT = 4096, 1024


def redact(text: str) -> str:
    """``text`` with every secret it carries replaced by ``[REDACTED]`` (linear time)."""
    if not text or len(text) < 6:
        return text
    done = _MEMO.get(text)
    if done is not None:
        return done
    if len(text) == 71 and text.startswith("sha256:") and not text[7:].strip("0123456789abcdef"):
        return text  # a digest (a pack's, a fact's): what the patterns below would keep, without compiling them
    ds = detect_secrets_enabled()
    extra: list[str] = []
    if ds:
        from stoprule._util.redact_judge import _detect_secrets_values

        extra = _detect_secrets_values(text)
    out = text
    if "://" in text:
        from stoprule._util.redact_judge import _urls

        out = _urls(text)
    # the gates read the text before any pattern ran: no marker holds a bracket or lies within
    # "[redacted]", so a redaction never adds one (it may remove one: the pattern then finds nothing)
    low, seen = out.lower(), out
    big = len(out) > 1 << 16  # the regex engine's search for a leading literal costs less than the gate
    if big or _UNGATED or [m for m in _ANY_LOWER if m in low] or [m for m in _ANY_EXACT if m in seen]:
        for lower, exact, pattern, apply in _GATES:
            if (
                not (lower or exact)
                or big
                and pattern.pattern[:1].isalnum()
                or any(m in low for m in lower)
                or any(m in seen for m in exact)
            ):
                out = apply(pattern, out)
    if ":" in out or "=" in out:
        out = _assignments(out)
    for value in extra:  # whole occurrences only
        out = _re().sub(rf"(?<![\w+/=-]){_re().escape(value)}(?![\w+/=-])", REDACTED, out)
    if not ds and len(text) <= MEMO_TEXT:
        if len(_MEMO) >= MEMO_MAX:
            _MEMO.clear()
        _MEMO[text] = out
    return out


def redact_obj(value: Any, depth: int = 0) -> Any:
    """A copy of a JSON-like value with every string redacted (keys of objects too)."""
    if isinstance(value, str):
        return redact(value)
    if depth >= MAX_DEPTH and isinstance(value, (dict, list, tuple)):
        return "[too deeply nested]"
    if isinstance(value, dict):
        return {redact(k) if isinstance(k, str) else k: redact_obj(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_obj(v, depth + 1) for v in value]
    return value
