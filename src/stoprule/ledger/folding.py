"""Folding the stop hook's journal (:mod:`stoprule.ledger.journal`) into its ledger: what the
next command that opens the ledger does first.

Every :meth:`Ledger.open <stoprule.ledger.store.Ledger.open>` of a ledger file folds its journal
in first (:func:`fold`), so every reader, writer and ``log verify`` sees the hook's decisions
in the ledger, in the order they were written, with the time they were decided, each recorded as
a stop (a stop after a retryable block is that block's retry, as ``Recorder.record_stop`` has it).
A fold holds
the ledger's write lock (one folder at a time) and:

1. renames the journal to ``<ledger>.journal.fold-H``, ``H`` the last event id in the ledger:
   hooks from now on start a new journal; it then takes the renamed file's lock exclusively,
   which waits for any hook still writing into it (hooks hold it shared while they write and
   check, under it, that their file is still the journal);
2. appends its decisions in one transaction (their events get ids ``H+1``, ``H+2``, ...), commits,
   and removes the file.

A fold killed after its commit leaves the ``fold-H`` file behind: the next fold sees that event
``H+1`` is its first decision (run, time, fact) and only removes it; killed before, the next
fold appends its decisions again (renamed to the then last id). So no decision is lost and
none is recorded twice. A line that is not a well-formed decision (a hook killed mid-write,
which was never acknowledged, or an edit) is not recorded: it is kept, as written, in
``<ledger>.journal.rejected``.
"""

from __future__ import annotations

import os

from stoprule._util.files import taken_aside
from stoprule._util.jsonin import loads
from stoprule._util.redact import redact_obj
from stoprule.engine.evaluator import Verdict
from stoprule.ledger.errors import check_run_id
from stoprule.ledger.events import canonical, digest
from stoprule.ledger.journal import FORMAT, SUFFIX, journal_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Ledger = Any  # stoprule.ledger.store.Ledger (which imports this module)

__all__ = ["fold", "pending"]

_FOLDING = SUFFIX + ".fold-"
_REJECTED = SUFFIX + ".rejected"
_KINDS = ("step", "blocked_attempt", "checkpoint")
_VERDICT_TEXT = ("verdict", "reason", "rule", "stop", "message", "policy")
MAX_LINE_BYTES = 16 << 20  # a longer line is not a decision this hook wrote


def _leftovers(path: str) -> list[tuple[int, str]]:
    """``(H, file)`` of folds that died, oldest first."""
    folder, name = os.path.split(path)
    prefix = name + _FOLDING[len(SUFFIX) :]
    out = []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for n in names:
        if n.startswith(prefix) and n[len(prefix) :].isdigit():
            out.append((int(n[len(prefix) :]), os.path.join(folder, n)))
    return sorted(out)


def pending(ledger_path: str) -> bool:
    """Whether the ledger at ``ledger_path`` has journaled decisions to fold in (a stat or two)."""
    path = journal_path(ledger_path)
    try:
        if os.stat(path).st_size > 0:
            return True
    except OSError:
        pass
    return bool(_leftovers(path))


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # an infinity (1e999) or NaN: not a number the ledger keeps
        raise ValueError(f"{text} is not a finite number")
    return value


def _decision(line: bytes) -> dict[str, Any] | None:
    """The journaled decision on ``line``, or None if it is not a well-formed one."""
    try:
        e = loads(line, parse_constant=_not_json, parse_float=_finite)
        v = e["verdict"]
        ok = (
            type(e) is dict
            and e.get("v") == FORMAT
            and type(e.get("at")) is str
            and e.get("kind") in _KINDS
            and type(e.get("retryable")) is bool
            and (not e["retryable"] or e["kind"] == "blocked_attempt")
            and type(v) is dict
            and type(v.get("ok")) is bool
            and type(v.get("requires_user_review")) is bool
            and "fact" in e
            and all(type(v.get(k)) is str for k in _VERDICT_TEXT)
            and all(v.get(k) is None or type(v.get(k)) is str for k in ("review_reason", "high_risk_stop"))
            and type(v.get("matched")) is list
            and all(
                type(m) is dict and all(type(m.get(k)) is str for k in ("rule", "verdict", "reason"))
                for m in v["matched"]
            )
        )
        if ok:
            check_run_id(e["run"])
    except Exception:  # noqa: BLE001 - anything malformed is simply not a decision
        return None
    return e if ok else None


def _read(path: str) -> tuple[list[dict[str, Any]], list[bytes]]:
    """The decisions in a journal file, in order, and the lines that are not decisions."""
    with open(path, "rb") as fh:
        data = fh.read()
    good, bad = [], []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        e = _decision(line) if len(line) <= MAX_LINE_BYTES else None
        if e is None:
            bad.append(line)
        else:
            good.append(e)
    return good, bad


def _last_event(ledger: Ledger) -> int:
    row = ledger.connection.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()
    return int(row[0])


def _committed(ledger: Ledger, last: int, first: dict[str, Any]) -> bool:
    """Whether the fold that began after event ``last`` committed: event ``last + 1`` is ``first``."""
    row = ledger.connection.execute("SELECT run, body FROM events WHERE id = ?", (last + 1,)).fetchone()
    if row is None or row[0] != first["run"]:
        return False
    try:
        body = loads(row[1])
    except ValueError:
        return False
    return bool(body.get("at") == first["at"] and body.get("fact") == _identity(first["fact"])[0])


def _retried(ledger: Ledger, run: str) -> str | None:
    """The block a stop in ``run`` retries, as :meth:`Recorder.record_stop
    <stoprule.ledger.recorder.Recorder.record_stop>` reads it: the run's tip when that is a
    retryable block not yet retried (the agent was kept working), else None."""
    st = ledger.status(run)
    if st is None or st.tip_kind != "blocked_attempt" or not st.retryable or ledger.retry_of(run, st.tip) is not None:
        return None
    return str(st.tip)


def _identity(fact: Any) -> tuple[str, str]:
    """``(digest, canonical JSON)`` of a fact, as the recorder keeps it (``recorder.fact_identity``,
    which this module cannot import: the recorder imports the store, which folds through here)."""
    text = canonical(redact_obj(fact), finite=True)
    return digest(text), text


def _append_all(ledger: Ledger, decisions: list[dict[str, Any]]) -> None:
    for e in decisions:  # each a stop: recorded as Recorder.record_stop records one, at its own time
        fd, body = _identity(e["fact"])
        ledger.decided_at = e["at"]
        try:
            ledger.append(
                e["run"],
                Verdict.from_dict(e["verdict"]),
                fd,
                body,
                kind=e["kind"],
                retryable=e["retryable"],
                retry_of=_retried(ledger, e["run"]),
            )
        finally:
            ledger.decided_at = None


def _reject(path: str, lines: list[bytes]) -> None:
    if not lines:
        return
    fd = os.open(path + _REJECTED[len(SUFFIX) :], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, b"".join(line + b"\n" for line in lines))
        os.fsync(fd)
    finally:
        os.close(fd)


def _fold_file(ledger: Ledger, path: str, taken: tuple[int, str] | None) -> None:
    """Fold the journal at ``path`` (``taken``: a fold that died left it as ``(H, file)``)."""
    with ledger.write():
        src = path if taken is None else taken[1]
        if taken is not None:
            decisions, bad = _read(src)
            if decisions and _committed(ledger, taken[0], decisions[0]):
                os.unlink(src)  # (its rejected lines were kept by the fold that committed it)
                return
        done = f"{path}{_FOLDING[len(SUFFIX) :]}{_last_event(ledger)}"
        try:
            with taken_aside(src, done):  # hooks from now on write a new journal; those writing this one are done
                decisions, bad = _read(done)
        except FileNotFoundError:  # another process folded it meanwhile
            return
        _append_all(ledger, decisions)
    _reject(path, bad)
    os.unlink(done)


def fold(ledger_path: str, open_writable: Callable[[], Ledger]) -> None:
    """Fold the journal of the ledger at ``ledger_path`` (and any fold that died) into it,
    through ``open_writable()`` (the ledger, opened for writing without folding)."""
    path = journal_path(ledger_path)
    with open_writable() as ledger:
        for taken in _leftovers(path):
            _fold_file(ledger, path, taken)
        try:
            fresh = os.stat(path).st_size > 0
        except OSError:
            fresh = False
        if fresh:
            _fold_file(ledger, path, None)
