"""One tool call in, the reason to refuse it out (None: not the guard's business).

Refused: a write (a write or edit tool, a shell redirection, a command that writes, moves or
deletes its arguments) to a protected place (:mod:`.paths`); a run of stoprule's mutating
commands (:mod:`.commands`), from the shell or from code; code (inline, a script, a
here-document fed to an interpreter) that names a protected place and writes, or runs
stoprule; a recursive delete, move or clean that takes a protected place along; a command
line too broken to read that names one. Reading is never refused.

On the cold path when the guard runs, before every tool call (tools/import_graph.py,
COLD_PATH_WHEN): its imports stay few, light and lazy.
"""

from __future__ import annotations

from stoprule._util import oslite as os
from stoprule.agent.guard.commands import MUTATING, mutating
from stoprule.agent.guard.paths import TEXT_NAMES, Places, protected
from stoprule.agent.guard.shell import Command, commands, expand_word, find_exec

__all__ = ["Call", "Refusal", "check"]

MAX_SCRIPT_BYTES = 1 << 20

# commands that only read their arguments (a redirection of theirs is still checked)
READERS = frozenset(
    {
        "cat",
        "less",
        "more",
        "head",
        "tail",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "ack",
        "ls",
        "ll",
        "dir",
        "tree",
        "stat",
        "file",
        "wc",
        "du",
        "df",
        "diff",
        "cmp",
        "comm",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "b2sum",
        "jq",
        "echo",
        "printf",
        "true",
        "false",
        "test",
        "[",
        "realpath",
        "readlink",
        "basename",
        "dirname",
        "cd",
        "pushd",
        "popd",
        "pwd",
        "which",
        "type",
        "hash",
        "bat",
        "od",
        "xxd",
        "hexdump",
        "strings",
        "sort",
        "uniq",
        "cut",
        "tr",
        "column",
        "nl",
        "fold",
        "sleep",
        "date",
        "whoami",
        "id",
        "uname",
        "env",
        "printenv",
        "set",
        "export",
        "unset",
        "source",
        ".",
        "wait",
        "jobs",
        "kill",
        "exit",
        "return",
        "shift",
        "read",
        "local",
        "declare",
        "typeset",
    }
)
GIT_READERS = frozenset(
    {
        "status",
        "log",
        "diff",
        "show",
        "ls-files",
        "ls-tree",
        "blame",
        "rev-parse",
        "grep",
        "check-ignore",
        "describe",
        "shortlog",
        "cat-file",
        "for-each-ref",
        "reflog",
        "whatchanged",
        "rev-list",
        "merge-base",
        "name-rev",
        "version",
        "help",
    }
)
# recursive deleters and movers: a folder that holds a protected place counts
TAKERS = frozenset({"rm", "rmdir", "mv", "chmod", "chown", "chattr", "shred", "unlink", "srm", "trash", "trash-put"})
COPIERS = frozenset({"cp", "rsync", "install", "ditto", "scp"})
INTERPRETERS = frozenset(
    {
        "python",
        "pypy",
        "node",
        "nodejs",
        "deno",
        "bun",
        "perl",
        "ruby",
        "php",
        "Rscript",
        "lua",
        "tclsh",
        "osascript",
        "pwsh",
        "powershell",
        "jshell",
        "groovy",
        "julia",
    }
)
INLINE_FLAGS = frozenset({"-c", "-e", "--eval", "-p", "--print", "-r", "-E", "-x", "--command", "-Command"})
SHELL_NAMES = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "source", "."})

_CODE_RUNS_STOPRULE = (
    r"\bimport\s+stoprule\b|\bfrom\s+stoprule\b|-m\s+['\"]?stoprule\b|__import__\(\s*['\"]stoprule"
    r"|import_module\(\s*['\"]stoprule|\bstoprule(?:\.exe)?['\"]?\s*[,\s]\s*['\"]?"
    r"(?:facts|blockers|pack|init|keys|hook|mcp|guard|log)\b"
)
_CODE_WRITES = (  # what code does to write, delete or run something (Python, Node, Perl, Ruby)
    r"open\s*\([^)]*['\"][rb]?[wax+]|\.write(?:_text|_bytes|lines)?\s*\(|write(?:File|FileSync|Sync)\b"
    r"|append(?:File|FileSync)\b|createWriteStream|os\.(?:remove|unlink|rename|replace|rmdir|removedirs|symlink|link"
    r"|truncate|chmod|makedirs|mkdir)\b|shutil\.|\.(?:unlink|rename|rmdir|symlink_to|hardlink_to|touch|mkdir)\s*\("
    r"|\b(?:rmSync|rmdirSync|unlinkSync|renameSync|copyFileSync|cpSync|symlinkSync|mkdirSync)\b|subprocess|os\.system"
    r"|\bpopen\b|\bspawn|execSync|\bexec[lv]?p?e?\s*\(|File\.(?:write|open|delete|rename)|\bunlink\b|\brename\b"
    r"|open\s*\(\s*\w+\s*,\s*['\"][>+]"
)


class Call:
    """One tool call, as the guard reads it: ``tool`` (the harness's name), a shell ``command``,
    the ``paths`` a write or edit tool writes, the ``cwd`` it runs in."""

    __slots__ = ("command", "cwd", "paths", "tool")

    def __init__(self, tool: str, cwd: str, command: str | None = None, paths: list[str] | None = None) -> None:
        self.tool, self.cwd, self.command, self.paths = tool, cwd, command, paths or []


class Refusal:
    """Why a call is refused: ``what`` (for the agent and the user: the path or command and why)
    and ``kind`` (``write``, ``command``, ``code``, ``unparsed``)."""

    __slots__ = ("kind", "target", "what")

    def __init__(self, kind: str, what: str, target: str) -> None:
        self.kind, self.what, self.target = kind, what, target

    def __repr__(self) -> str:
        return f"Refusal({self.kind!r}, {self.what!r})"


def _interpreter(name: str, among: frozenset[str] = INTERPRETERS) -> bool:
    """``python3.11`` is ``python``, ``lua5.4`` is ``lua``: a known name, then a version."""
    stem = name.rstrip("0123456789.")
    return stem in among


def _abs(path: str, cwd: str, env: dict[str, str]) -> str:
    path = expand_word(path, env)
    return os.path.normpath(os.path.join(cwd, path))


def _braces(word: str) -> list[str]:
    """Bash brace expansion of ``word`` (``a{b,c}d`` -> ``abd``, ``acd``), at most 64 words."""
    if "{" not in word or "," not in word:
        return [word]
    import re

    m = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if m is None:
        return [word]
    out: list[str] = []
    for part in m.group(1).split(","):
        out += _braces(word[: m.start()] + part + word[m.end() :])
        if len(out) >= 64:
            break
    return out[:64]


def _paths(word: str, cwd: str, env: dict[str, str]) -> list[str]:
    """The absolute paths ``word`` can stand for (braces and globs expanded against the disk)."""
    if word.startswith("-") and "=" in word or "=" in word and word.partition("=")[0].isalpha():
        word = word.split("=", 1)[1]
    if not word or word.startswith("-"):
        return []
    out: list[str] = []
    for w in _braces(word):
        full = _abs(w, cwd, env)
        if any(c in w for c in "*?["):
            import glob

            out += glob.glob(full, recursive=False)[:256]
        out.append(full)
    return out


def _write_refusal(path: str, places: Places, contains: bool = False, via: str = "writes") -> Refusal | None:
    what = protected(path, places)
    if what is not None:
        return Refusal("write", f"{via} {path} ({what})", path)
    what = protected(path, places, contains=True) if contains else None
    if what is None:
        return None
    return Refusal("write", f"{via} {path}, which holds {what}", path)


def _program(cmd: Command) -> tuple[str, list[str]]:
    name = os.path.basename(cmd.argv[0]) if cmd.argv else ""
    return name, cmd.argv[1:]


def _stoprule_args(name: str, args: list[str]) -> list[str] | None:
    """stoprule's own arguments when this command runs stoprule (``stoprule ...``, ``python -m stoprule ...``)."""
    if name in ("stoprule", "stoprule.exe"):
        return args
    if _interpreter(name, frozenset({"python", "pypy"})):
        for i, a in enumerate(args):
            if a == "-m" and i + 1 < len(args):
                return args[i + 2 :] if args[i + 1].split(".")[0] == "stoprule" else None
            if a.startswith("-m") and len(a) > 2:
                return args[i + 1 :] if a[2:].split(".")[0] == "stoprule" else None
            if not a.startswith("-"):
                return None
    return None


def _read_script(path: str) -> str | None:
    from stoprule._util.regular import read_regular

    data = read_regular(path, MAX_SCRIPT_BYTES)  # a FIFO named like a script: nothing (never blocks)
    return None if data is None else data.decode("utf-8", "replace")


def code_refusal(text: str, where: str) -> Refusal | None:
    """Code that runs stoprule, or names a protected place and writes (``where``: what ran it)."""
    import re

    m = re.search(_CODE_RUNS_STOPRULE, text)
    if m is not None:
        return Refusal("code", f"{where} runs stoprule ({m.group(0).strip()!r})", where)
    m = re.search(TEXT_NAMES, text)
    if m is not None and re.search(_CODE_WRITES, text):
        return Refusal("code", f"{where} names {m.group(0)} and writes files", where)
    return None


def _script_refusal(
    cmd: Command, name: str, args: list[str], places: Places, env: dict[str, str], depth: int
) -> Refusal | None:
    """An interpreter's inline code, here-document or script; a shell's script; an executable file."""
    shown = " ".join(cmd.argv)[:120]
    if name in SHELL_NAMES or _interpreter(name):
        for i, a in enumerate(args):
            if a in INLINE_FLAGS and i + 1 < len(args) and name not in SHELL_NAMES:
                found = code_refusal(args[i + 1], f"the inline code of `{shown}`")
                if found:
                    return found
        if cmd.stdin is not None and name not in SHELL_NAMES:
            found = code_refusal(cmd.stdin, f"the code fed to `{name}`")
            if found:
                return found
        script = next((a for a in args if not a.startswith("-")), None)
        if script is not None and not script.startswith("$"):
            path = _abs(script, cmd.cwd, env)
            if os.path.isfile(path):
                text = _read_script(path)
                if text is not None:
                    return _text_refusal(text, path, name in SHELL_NAMES, cmd.cwd, places, env, depth)
        return None
    if cmd.argv and ("/" in cmd.argv[0]) and name != "stoprule":
        path = _abs(cmd.argv[0], cmd.cwd, env)
        if os.path.isfile(path):
            text = _read_script(path)
            if text is not None:
                first = text.split("\n", 1)[0]
                shell = first.startswith("#!") and any(s in first for s in ("sh", "bash", "zsh"))
                if first.startswith("#!"):
                    return _text_refusal(text, path, shell and "python" not in first, cmd.cwd, places, env, depth)
    return None


def _text_refusal(
    text: str, path: str, shell: bool, cwd: str, places: Places, env: dict[str, str], depth: int
) -> Refusal | None:
    if shell and depth < 3:
        found = shell_refusal(text, cwd, places, env, depth + 1)
        if found is not None:
            found.what = f"the script {path}: {found.what}"
            return found
        return None
    return code_refusal(text, f"the script {path}")


def _git_refusal(args: list[str], cmd: Command, places: Places, env: dict[str, str]) -> tuple[Refusal | None, bool]:
    """(a refusal, whether git only reads here)."""
    rest = list(args)
    cwd = cmd.cwd
    while rest and rest[0].startswith("-"):
        if rest[0] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") and len(rest) > 1:
            if rest[0] == "-C":
                cwd = _abs(rest[1], cwd, env)
            rest = rest[2:]
        else:
            rest = rest[1:]
    sub = rest[0] if rest else ""
    flags = "".join(a.lstrip("-") for a in rest[1:] if a.startswith("-") and not a.startswith("--"))
    if sub == "clean" and ("x" in flags or "X" in flags):
        own = protected(os.path.join(cwd, ".stoprule"), places)
        return Refusal(
            "command", f"`git clean -x` deletes ignored files: stoprule's state ({own or '.stoprule/'})", "git clean"
        ), False
    if sub == "stash" and any(a in ("-a", "--all") for a in rest[1:]):
        return Refusal(
            "command",
            "`git stash --all` moves ignored files away: stoprule's state (.stoprule/state)",
            "git stash --all",
        ), False
    return None, sub in GIT_READERS or (sub == "branch" and len(rest) == 1)


def _command_refusal(cmd: Command, places: Places, env: dict[str, str], depth: int) -> Refusal | None:
    for target in cmd.writes:
        for path in _paths(target, cmd.cwd, env):
            found = _write_refusal(path, places)
            if found:
                found.what = f"a redirection {found.what}"
                return found
    if not cmd.argv:
        return None
    name, args = _program(cmd)
    sr = _stoprule_args(name, args)
    if sr is not None:
        what = mutating(sr)
        if what is not None:
            return Refusal("command", f"runs `stoprule {what}`, which only the user may run", f"stoprule {what}")
        plain = [a for a in sr if not a.startswith("-")]
        unknown = bool(plain) and ("$" in plain[0] or (plain[0] in MUTATING and "$" in " ".join(plain[1:2])))
        if unknown:  # "$@", "$(...)", xargs' stdin: which command runs is not known here
            return Refusal("command", "runs stoprule with a command made at run time", "stoprule")
        return None
    if name == "alias":  # an alias that runs stoprule's mutating commands
        for a in args:
            value = a.partition("=")[2]
            found = shell_refusal(value, cmd.cwd, places, env, depth + 1) if value and depth < 3 else None
            if found is not None:
                found.what = f"an alias: {found.what}"
                return found
    found = _script_refusal(cmd, name, args, places, env, depth)
    if found is not None:
        return found
    readonly = name in READERS or (name == "sed" and not any(a.startswith(("-i", "--in-place")) for a in args))
    if name == "git":
        found, readonly = _git_refusal(args, cmd, places, env)
        if found is not None:
            return found
    if name == "find":
        runs = [os.path.basename(sub[0]) for sub in find_exec(args) if sub]
        readonly = not any(a in ("-delete", "-fprint", "-fprint0", "-fprintf", "-fls") for a in args) and all(
            r in READERS for r in runs
        )
        takes = not readonly
    else:
        takes = name in TAKERS
    if readonly:
        return None
    words = [a for a in args if a not in ("--",)]
    if name in COPIERS and len(words) >= 2:  # what they write is the destination (or what lands in it)
        dest = words[-1]
        for path in _paths(dest, cmd.cwd, env):
            found = _write_refusal(path, places, via=f"`{name}` writes")
            if found:
                return found
            held = protected(path, places, contains=True)
            if held:  # a folder holding a protected place: does a source bring one along?
                for src in words[:-1]:
                    for p in _paths(src, cmd.cwd, env):
                        if protected(p, places, contains=True):
                            return Refusal("write", f"`{name}` copies {p} over {path}, which holds {held}", path)
        return None
    for word in words:
        for path in _paths(word, cmd.cwd, env):
            found = _write_refusal(path, places, contains=takes, via=f"`{name}` changes")
            if found:
                return found
    return None


def shell_refusal(text: str, cwd: str, places: Places, env: dict[str, str], depth: int = 0) -> Refusal | None:
    """The refusal of a shell command line, or None."""
    cmds = commands(text, cwd, env)
    if cmds is None:
        import re

        m = re.search(TEXT_NAMES, text) or re.search(r"\bstoprule\b", text)
        if m is not None:
            return Refusal(
                "unparsed", f"a command line that does not parse (an open quote) names {m.group(0)}", text[:200]
            )
        return None
    for cmd in cmds:
        found = _command_refusal(cmd, places, env, depth)
        if found is not None:
            return found
    for cmd in cmds:  # a path made at run time (a substitution, a variable the line does not set)
        name = os.path.basename(cmd.argv[0]) if cmd.argv else ""
        if name in READERS or (name == "git" and len(cmd.argv) > 1 and cmd.argv[1] in GIT_READERS):
            continue
        if any("$" in w for w in cmd.argv[1:] + cmd.writes):
            import re

            named = re.search(TEXT_NAMES, text)
            if named is not None:
                return Refusal(
                    "write",
                    f"`{name or 'a redirection'}` writes a path made at run time, in a line "
                    f"that names {named.group(0)}",
                    text[:200],
                )
    return None


def patch_paths(text: str) -> list[str]:
    """The files a patch (``apply_patch`` format or a unified diff) touches."""
    import re

    found = re.findall(
        r"(?m)^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$"
        r"|^(?:---|\+\+\+) (?:[ab]/)?(.+?)\s*$",
        text,
    )
    return [p for groups in found for p in groups if p and p != "/dev/null"]


def check(call: Call, places: Places, env: dict[str, str]) -> Refusal | None:
    """The reason to refuse ``call``, or None."""
    for path in call.paths:
        found = _write_refusal(_abs(path, call.cwd, env), places)
        if found:
            return found
    if call.command:
        if call.command.lstrip().startswith("*** Begin Patch"):
            for path in patch_paths(call.command):
                found = _write_refusal(_abs(path, call.cwd, env), places)
                if found:
                    return found
            return None
        return shell_refusal(call.command, call.cwd, places, env)
    return None
