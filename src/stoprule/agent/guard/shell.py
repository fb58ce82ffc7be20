"""A shell command line as the simple commands it runs, nested ones included.

    for cmd in commands("cd .stoprule && sh -c 'rm config.yaml'", "/repo"):
        cmd.argv, cmd.cwd, cmd.writes      # ['rm', 'config.yaml'], '/repo/.stoprule', []

What is followed: lists and pipelines (``;`` ``&&`` ``||`` ``|`` ``&``, newlines), subshells
and groups, command substitutions (``$(...)``, backticks, ``<(...)``), here-documents and
here-strings (kept with the command they feed), variable assignments (expanded in later
words), ``cd``, the wrappers that run another command (``env``, ``sudo``, ``nohup``,
``timeout``, ``xargs``, ``uv run``, ``find -exec`` ...) and the shells and ``eval`` that run a
string (``sh -c``, ``bash -lc``, ``watch``, ``script -c``). A line that does not tokenize
(an open quote) is reported as such: the caller treats it with suspicion.

Best effort, by design: a command built at run time (``$(printf ...)``, base64, a variable
the line does not set) is not resolved.

On the cold path when the guard runs, before every tool call (tools/import_graph.py,
COLD_PATH_WHEN): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os

__all__ = ["Command", "commands", "expand_word", "find_exec"]

MAX_DEPTH = 6  # nested shells and substitutions followed
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "\n", "(", ")", "|&", ";;", ";&"})
_XARGS_VALUED = frozenset(
    {
        "-I",
        "-i",
        "-n",
        "-P",
        "-d",
        "-L",
        "-l",
        "-s",
        "-E",
        "-e",
        "-a",
        "--max-args",
        "--max-procs",
        "--delimiter",
        "--arg-file",
    }
)
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "time", "fi", "done"})
# patterns compiled on first use (re's cache): most lines need neither
_HEREDOC = r"<<(-?)[ \t]*(['\"]?)([A-Za-z0-9_.-]+)\2"
_VAR = r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))"
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox", "fish"})


class Command:
    """One simple command: ``argv`` (assignments and wrappers removed), the directory it runs
    in, the files its redirections write, and the text fed to its stdin (a here-document or
    here-string), if any."""

    __slots__ = ("argv", "cwd", "stdin", "writes")

    def __init__(self, argv: list[str], cwd: str, writes: list[str], stdin: str | None) -> None:
        self.argv, self.cwd, self.writes, self.stdin = argv, cwd, writes, stdin

    def __repr__(self) -> str:
        return f"Command({self.argv!r}, cwd={self.cwd!r}, writes={self.writes!r})"


class _Unparsed(ValueError):
    """The line does not tokenize (an open quote): it cannot be split into commands."""


def _assignment(word: str) -> bool:
    """``NAME=value`` (also ``NAME+=`` and ``NAME[i]=``)."""
    name, eq, _ = word.partition("=")
    if not eq:
        return False
    name = name.rstrip("+")
    if name.endswith("]") and "[" in name:
        name = name[: name.index("[")]
    return name.isidentifier() and name.isascii()


def _substitutions(text: str) -> tuple[str, list[str]]:
    """``text`` with each command substitution replaced by a placeholder word, and their bodies."""
    out: list[str] = []
    bodies: list[str] = []
    i, n = 0, len(text)
    quote = ""
    while i < n:
        c = text[i]
        if c == "\\" and quote != "'" and i + 1 < n:
            out.append(text[i : i + 2])
            i += 2
            continue
        if quote == "'":
            out.append(c)
            if c == "'":
                quote = ""
            i += 1
            continue
        if c in "'\"":
            if quote == c:
                quote = ""
            elif not quote and c == "'":
                quote = "'"
            elif not quote:
                quote = '"'
            out.append(c)
            i += 1
            continue
        if c in "$<>" and text.startswith("(", i + 1) and not text.startswith("((", i + 1):
            depth, j = 1, i + 2
            while j < n and depth:
                if text[j] == "(":
                    depth += 1
                elif text[j] == ")":
                    depth -= 1
                j += 1
            bodies.append(text[i + 2 : j - 1])
            out.append("$SUBST" if c == "$" else " /dev/fd/63 ")
            i = j
            continue
        if c == "`":
            j = text.find("`", i + 1)
            j = n if j < 0 else j
            bodies.append(text[i + 1 : j])
            out.append("$SUBST")
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out), bodies


def _heredocs(text: str) -> tuple[str, list[str]]:
    """``text`` without its here-document bodies (the ``<<WORD`` stays), and the bodies in order."""
    bodies: list[str] = []
    if "<<" not in text:
        return text, bodies
    import re

    lines = text.split("\n")
    kept: list[str] = []
    pending: list[tuple[bool, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        kept.append(line)
        pending = [(m.group(1) == "-", m.group(3)) for m in re.finditer(_HEREDOC, line)] if "<<" in line else []
        i += 1
        for strip, word in pending:
            body: list[str] = []
            while i < len(lines):
                current = lines[i].lstrip("\t") if strip else lines[i]
                i += 1
                if current == word:
                    break
                body.append(lines[i - 1])
            bodies.append("\n".join(body))
    return "\n".join(kept), bodies


_OPERATORS = ("<<<", "<<-", "&>>", "&&", "||", ";;", ";&", "|&", "<<", ">>", ">|", "<>", "<&", ">&", "&>",
              ";", "&", "|", "(", ")", "<", ">", "\n")  # fmt: skip
_ANSI = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v",
         "\\": "\\", "'": "'", '"': '"', "?": "?"}  # fmt: skip


def _ansi(text: str, i: int) -> tuple[str, int]:
    """A ``$'...'`` string from its first character at ``i``: (its value, the index after it)."""
    out: list[str] = []
    n = len(text)
    while i < n and text[i] != "'":
        c = text[i]
        if c == "\\" and i + 1 < n:
            e = text[i + 1]
            if e == "x" or e in "01234567":
                digits, base, width = ("0123456789abcdefABCDEF", 16, 2) if e == "x" else ("01234567", 8, 3)
                j = i + 2 if e == "x" else i + 1
                k = j
                while k < n and k - j < width and text[k] in digits:
                    k += 1
                if k > j:
                    out.append(chr(int(text[j:k], base)))
                    i = k
                    continue
            out.append(_ANSI.get(e, "\\" + e))
            i += 2
            continue
        out.append(c)
        i += 1
    if i >= n:
        raise _Unparsed("no closing quotation")
    return "".join(out), i + 1


def _tokens(text: str) -> list[str]:
    """Words (quotes and escapes resolved) and operators (newline among them); a digit-only word
    glued to a redirection (``2>``) is the descriptor's number, dropped. Raises :class:`_Unparsed`."""
    tokens: list[str] = []
    word: list[str] = []
    in_word = False
    i, n = 0, len(text)

    def flush() -> None:
        nonlocal in_word
        if in_word:
            tokens.append("".join(word))
            word.clear()
            in_word = False

    while i < n:
        c = text[i]
        if c in " \t\r":
            flush()
            i += 1
        elif c == "#" and not in_word:
            while i < n and text[i] != "\n":
                i += 1
        elif c == "\\":
            if i + 1 < n and text[i + 1] != "\n":
                word.append(text[i + 1])
                in_word = True
            i += 2
        elif c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                raise _Unparsed("no closing quotation")
            word.append(text[i + 1 : j])
            in_word = True
            i = j + 1
        elif c == "$" and text.startswith("'", i + 1):
            value, i = _ansi(text, i + 2)
            word.append(value)
            in_word = True
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n':
                    if text[i + 1] != "\n":
                        word.append(text[i + 1])
                    i += 2
                    continue
                word.append(text[i])
                i += 1
            if i >= n:
                raise _Unparsed("no closing quotation")
            in_word = True
            i += 1
        else:
            op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
            if op is None:
                word.append(c)
                in_word = True
                i += 1
                continue
            if in_word and op[0] in "<>" and "".join(word).isdigit():
                word.clear()
                in_word = False
            flush()
            tokens.append(op)
            i += len(op)
    flush()
    return tokens


def expand_word(word: str, env: dict[str, str]) -> str:
    """``$NAME`` / ``${NAME}`` from ``env`` (the line's own assignments, ``HOME``) and a leading ``~``."""
    if "$" in word:
        import re

        word = re.sub(_VAR, lambda m: env.get(m.group(1) or m.group(2), m.group(0)), word)
    if word == "~" or word.startswith("~/"):
        word = env.get("HOME", "~") + word[1:]
    return word


def _skip_options(argv: list[str], with_value: frozenset[str] = frozenset()) -> list[str]:
    """``argv`` after its leading options (``with_value``: options that take the next word)."""
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        if argv[i] == "--":
            return argv[i + 1 :]
        i += 2 if argv[i] in with_value else 1
    return argv[i:]


def _unwrap(argv: list[str]) -> tuple[list[str], str | None]:
    """The command a wrapper runs: ``(argv, None)``, or ``([], TEXT)`` when it runs a shell string."""
    for _ in range(8):
        if not argv:
            return argv, None
        name = os.path.basename(argv[0])
        rest = argv[1:]
        if argv[0] in _KEYWORDS:
            argv = rest
            continue
        if name in _SHELLS:
            opts = []
            for i, a in enumerate(rest):
                if not a.startswith("-"):
                    break
                opts.append(a)
                if "c" in a.lstrip("-") and not a.startswith("--") and i + 1 < len(rest):
                    return [], rest[i + 1]
            return argv, None
        if name == "eval":
            return [], " ".join(rest)
        if name in ("watch", "script", "su"):
            body = _skip_options(rest, frozenset({"-n", "-d", "-c", "--command", "-s", "-u"}))
            for i, a in enumerate(rest):
                if a in ("-c", "--command") and i + 1 < len(rest):
                    return [], rest[i + 1]
            if name == "watch":
                return [], " ".join(body)
            return argv, None
        if name == "env":
            rest = _skip_options(rest, frozenset({"-u", "--unset", "-C", "--chdir"}))
            for i, a in enumerate(argv[1:]):
                if a in ("-S", "--split-string") and i + 2 < len(argv):
                    return [], " ".join(argv[i + 2 :])
            while rest and _assignment(rest[0]):
                rest = rest[1:]
            argv = rest
            continue
        if name in ("sudo", "doas"):
            argv = _skip_options(rest, frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"}))
            continue
        if name in (
            "nohup",
            "setsid",
            "builtin",
            "chronic",
            "unbuffer",
            "caffeinate",
            "command",
            "exec",
            "time",
            "stdbuf",
            "strace",
            "ltrace",
            "nice",
            "ionice",
            "chroot",
            "systemd-run",
            "firejail",
            "torsocks",
        ):
            argv = _skip_options(rest, frozenset({"-n", "-c", "-a", "-o", "-p", "-e", "-s", "--unit", "-u"}))
            if name == "chroot" and argv:
                argv = argv[1:]
            continue
        if name == "timeout":
            rest = _skip_options(rest, frozenset({"-s", "--signal", "-k", "--kill-after"}))
            argv = rest[1:]
            continue
        if name == "flock":
            rest = _skip_options(rest, frozenset({"-w", "-E"}))
            for i, a in enumerate(rest):
                if a in ("-c", "--command") and i + 1 < len(rest):
                    return [], rest[i + 1]
            argv = rest[1:]
            continue
        if name in ("xargs", "parallel"):  # the arguments come from stdin: a word that stands for them
            argv = _skip_options(rest, _XARGS_VALUED)
            argv = [*argv, "$STDIN_ARGS"] if argv else argv
            continue
        if name in ("uvx", "pipx", "npx", "bunx") or (
            name in ("uv", "poetry", "pdm", "hatch", "conda", "pixi", "rye") and rest[:1] == ["run"]
        ):
            rest = rest[1:] if rest[:1] == ["run"] else rest
            argv = _skip_options(rest, frozenset({"--with", "--from", "-p", "--python", "-n", "--name", "--spec"}))
            continue
        return argv, None
    return argv, None


def find_exec(argv: list[str]) -> list[list[str]]:
    """The commands ``find ... -exec CMD ... ;`` runs."""
    out: list[list[str]] = []
    i = 0
    while i < len(argv):
        if argv[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(argv) and argv[j] not in (";", "+", "\\;"):
                j += 1
            out.append(argv[i + 1 : j])
            i = j
        i += 1
    return out


def commands(text: str, cwd: str, env: dict[str, str] | None = None) -> list[Command] | None:
    """The simple commands ``text`` runs (from ``cwd``), in order; None when the line does not
    tokenize (an open quote: it cannot be split into commands)."""
    try:
        return _commands(text, cwd, env, 0)
    except _Unparsed:
        return None


def _commands(text: str, cwd: str, env: dict[str, str] | None, depth: int) -> list[Command]:
    variables = dict(env or {})
    found: list[Command] = []
    if depth > MAX_DEPTH:
        return found
    text, heredocs = _heredocs(text)
    text, substituted = _substitutions(text)
    for body in substituted:
        found += _commands(body, cwd, variables, depth + 1)
    tokens = _tokens(text)
    here = iter(heredocs)
    argv: list[str] = []
    writes: list[str] = []
    stdin: str | None = None
    assigns: dict[str, str] = {}

    def end() -> None:
        nonlocal argv, writes, stdin, assigns, cwd
        words = [expand_word(w, variables) for w in argv]
        if not words:
            variables.update(assigns)
        inner, shell_text = _unwrap(words)
        if shell_text is not None:
            found.extend(_commands(shell_text, cwd, variables, depth + 1))
            if stdin is not None:
                found.extend(_commands(stdin, cwd, variables, depth + 1))
        elif inner or writes:
            name = os.path.basename(inner[0]) if inner else ""
            if name in ("export", "declare", "typeset", "local", "readonly"):
                variables.update({a.split("=", 1)[0]: a.split("=", 1)[1] for a in inner[1:] if "=" in a})
            found.append(Command(inner, cwd, [expand_word(w, variables) for w in writes], stdin))
            if name in _SHELLS and stdin is not None and len(inner) == 1:
                found.extend(_commands(stdin, cwd, variables, depth + 1))
            if name == "find":
                for sub in find_exec(inner):
                    found.append(Command(sub, cwd, [], None))
            if name in ("cd", "pushd") and len(inner) > 1 and not inner[-1].startswith("-"):
                cwd = os.path.normpath(os.path.join(cwd, inner[-1]))
        argv, writes, stdin, assigns = [], [], None, {}

    it = iter(tokens)
    for tok in it:
        if tok in _SEPARATORS:
            end()
            continue
        if set(tok) <= set("<>&|") and tok:
            target = next(it, "")
            if tok in ("<<", "<<-"):
                stdin = next(here, None)
            elif tok == "<<<":
                stdin = target
            elif ">" in tok and not (tok.endswith("&") and target.isdigit()) and target != "&":
                writes.append(target)
            continue
        if not argv and _assignment(tok):
            name, _, value = tok.partition("=")
            assigns[name.rstrip("+")] = value
            continue
        argv.append(tok)
    end()
    return found
