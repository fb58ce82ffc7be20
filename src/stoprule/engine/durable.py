"""The durable_rules C engine, used directly: assert a fact, collect matches, retract.

One set of ruleset handles per thread (handles are not thread-safe). Rules carry
no ``run`` action: the matched rule names are read from the engine's action queue.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import _thread  # threading's lock and local, without importing threading (not on the cold path)
import itertools

from stoprule._util.jsonout import encoder

try:  # compiled into stoprule at install (hatch_build.py)
    import stoprule.engine.durable_rules_engine as _dre

    ENGINE_SOURCE = "built into stoprule"
except ImportError:  # a source tree run in place, not built: the engine installed beside it
    import durable_rules_engine as _dre

    ENGINE_SOURCE = "installed beside stoprule"

__all__ = ["ENGINE_SOURCE", "Engine", "EngineError", "check_ruleset", "encode", "library"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

# UTF-8 as is: the engine does not decode \u escapes before matching patterns
_fast_encode = encoder(separators=(",", ":"), ensure_ascii=False)
_string = encoder(ensure_ascii=False)  # a str's JSON text
# a float written with an exponent and no fraction ("1e-09", "1e+16"): the engine's number
# parser takes an exponent only after a fraction and fails with error 204 on these.
# Compiled on first use (a start with a cached pack may encode nothing).
_BARE_EXPONENT: Any = None
_names = itertools.count()
EngineError = _dre.error  # what the engine raises, with its numeric code in the message
_names_lock = _thread.allocate_lock()


def _float(v: float) -> str:
    """``v`` as the engine reads it back exactly: the shortest repr, with a fraction before
    any exponent (``1.0e-09``); ``-0.0`` stays ``-0.0``."""
    text = repr(v)
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        text = f"{mantissa}.0e{exponent}"
    return text


def encode(value: Any) -> str:
    """JSON the engine parses as meant (floats with a fraction before the exponent)."""
    global _BARE_EXPONENT
    text = _fast_encode(value)
    if "e-" not in text and "e+" not in text:  # Python writes every exponent with its sign
        return text
    if _BARE_EXPONENT is None:
        import re

        _BARE_EXPONENT = re.compile(r"[0-9]e[-+][0-9]")
    if _BARE_EXPONENT.search(text) is None:
        return text
    from stoprule.engine.slow_encode import slow

    out: list[str] = []
    slow(value, out, _string, _float)
    return "".join(out)


def _unique(prefix: str) -> str:
    with _names_lock:
        return f"{prefix}-{next(_names)}"


def check_ruleset(ruleset: dict[str, Any]) -> str | None:
    """Create (and drop) one ruleset; the engine's complaint, if any."""
    try:
        handle = _dre.create_ruleset(_unique("check"), encode(ruleset))
    except Exception as exc:  # the engine raises a bare error with a numeric code
        return str(exc)
    _dre.delete_ruleset(handle)
    return None


# Idle handles by ruleset definition. durable_rules 2.0.28 does not free a ruleset's state
# (about 0.44 MB once a fact was asserted) in ``delete_ruleset``, and its ``delete_state``
# corrupts the heap: a handle whose thread or engine is gone is therefore kept, clean (every
# fact is retracted after matching), for the next thread or engine with the same ruleset.
# Memory then follows the number of handles in use at once, not the number ever created.
_IDLE: dict[str, list[int]] = {}
_IDLE_LOCK = _thread.RLock()  # re-entrant: a finalizer may run while the pool is in use
MAX_IDLE_PER_RULESET = 256
MAX_IDLE = 4096


def _acquire(definition: str) -> int:
    with _IDLE_LOCK:
        idle = _IDLE.get(definition)
        if idle:
            return idle.pop()
    handle: int = _dre.create_ruleset(_unique("stoprule"), definition)
    return handle


def _release(pairs: list[tuple[str, int]]) -> None:
    """Return handles to the idle pool (or delete them beyond its bounds)."""
    with _IDLE_LOCK:
        total = sum(len(v) for v in _IDLE.values())
        for definition, handle in pairs:
            idle = _IDLE.setdefault(definition, [])
            if len(idle) < MAX_IDLE_PER_RULESET and total < MAX_IDLE:
                idle.append(handle)
                total += 1
            else:
                try:  # noqa: SIM105 - contextlib is not on the stop's path
                    _dre.delete_ruleset(handle)
                except Exception:  # noqa: BLE001, S110 - the engine raises a bare error
                    pass
        pairs.clear()


def library() -> str:
    """The file of the engine's C module (a backend of its own links the same engine)."""
    return str(_dre.__file__)


class _Handles:
    """One thread's ruleset handles, released when the last reference goes: with the thread
    (its ``threading.local`` entry), or with the engine. A matcher refers to its holder, so
    handles in use are never released under it, and an idle handle has no holder."""

    __slots__ = ("handles", "pairs")

    def __init__(self, defs: Sequence[str]) -> None:
        self.pairs: list[tuple[str, int]] = []
        for d in defs:
            self.pairs.append((d, _acquire(d)))
        self.handles = [h for _, h in self.pairs]

    def __del__(self) -> None:  # (not weakref.finalize: importing weakref costs a start ~0.5 ms)
        try:  # noqa: SIM105 - contextlib costs the cold start ~1 ms
            _release(self.pairs)
        except Exception:  # noqa: BLE001, S110 - at interpreter exit the pool may be gone already
            pass


class Engine:
    """Matches projected facts against compiled rulesets; safe to share across threads.

    A projected fact is given JSON-encoded as :func:`encode` writes it, without its opening
    brace: one text for every ruleset, or one per ruleset (a projection too wide to send
    whole: the engine takes at most 252 properties per fact, ``id`` and ``sid`` included).
    ``always``: names of rules whose condition is constant true (not sent to the engine).
    A ruleset may be given already encoded (a ``str``, as :func:`encode` writes it).
    """

    def __init__(self, rulesets: Sequence[dict[str, Any] | str], always: Sequence[str] = ()) -> None:
        self._defs = [rs if isinstance(rs, str) else encode(rs) for rs in rulesets]
        self._always = frozenset(always)
        self._local = _thread._local()  # threading.local

    def _handles(self) -> _Handles:
        hs = getattr(self._local, "handles", None)
        if hs is None:
            hs = self._local.handles = _Handles(self._defs)
        return hs

    def thread_handles(self) -> tuple[object, list[int]]:
        """This thread's ruleset handles, in order, and their owner: keep it while using them."""
        hs = self._handles()
        return hs, hs.handles

    def text_matcher(self) -> Callable[[str], set[str]]:
        """This thread's ``text -> names of the rules whose condition holds``, one text for every
        ruleset (fetch once, call per fact)."""
        fn = getattr(self._local, "match_text", None)
        if fn is None:
            fn = self._local.match_text = _make_matcher(self._handles(), self._always, per_ruleset=False)
        return fn

    def texts_matcher(self) -> Callable[[Sequence[str]], set[str]]:
        """Like :meth:`text_matcher`, given one text per ruleset, in order."""
        fn = getattr(self._local, "match_texts", None)
        if fn is None:
            fn = self._local.match_texts = _make_matcher(self._handles(), self._always, per_ruleset=True)
        return fn


def _make_matcher(holder: _Handles, always: frozenset[str], per_ruleset: bool) -> Callable[[Any], set[str]]:
    """Assert the fact, drain the action queue for the matched rule names, retract it.

    Each fact goes in under a fresh ``id`` and is retracted by ``{"id": n}``: the engine
    then neither hashes the content to name the fact nor parses it again to retract it.
    ``always``: rules whose condition is constant true, kept out of the engine.
    ``per_ruleset``: the function takes one text per ruleset instead of one for all.
    """
    assert_fact = _dre.assert_fact
    start = _dre.start_action_for_state
    complete_and_next = _dre.complete_and_start_action
    retract = _dre.retract_fact
    handles = holder.handles
    ids = itertools.count()

    def _drop(h: int, n: int) -> None:
        """After an engine error (a limit met while matching): retract the fact, in case
        part of it was stored."""
        try:  # noqa: SIM105 - contextlib is not on the stop's path
            retract(h, f'{{"id":{n}}}')
        except EngineError:
            pass

    def _assert(h: int, text: str, n: int) -> Any:
        try:
            return assert_fact(h, text)
        except EngineError:
            _drop(h, n)
            raise

    def run(h: int, text: str, n: int, names: set[str]) -> None:
        result = _assert(h, text, n)
        if result[0]:  # 1: matched no rule, and the fact was not stored
            return
        state = result[1]
        try:
            action = start(h, state)
            if action:
                msg = action[1]  # {"r3":{"m":{...}}}: the rule name is the first key
                names.add(msg[2 : msg.index('"', 2)])
                while msg := complete_and_next(h, state):
                    names.add(msg[2 : msg.index('"', 2)])
        finally:
            retract(h, f'{{"id":{n}}}')

    if not handles:  # every rule is constant true (or there is none)

        def match_none(body: Any, _holder: _Handles = holder) -> set[str]:
            return set(always)

        return match_none

    if per_ruleset:

        def match_texts(bodies: Sequence[str], _holder: _Handles = holder) -> set[str]:
            n = next(ids)
            names = set(always)
            for h, body in zip(handles, bodies, strict=True):
                run(h, f'{{"id":{n},' + body, n, names)
            return names

        return match_texts

    if len(handles) == 1:
        (h0,) = handles

        def match_text(body: str, _holder: _Handles = holder) -> set[str]:
            # run() inlined: the common case (one ruleset) saves a call per fact
            n = next(ids)
            names = set(always)
            try:
                result = assert_fact(h0, f'{{"id":{n},' + body)
            except EngineError:
                _drop(h0, n)
                raise
            if result[0]:  # 1: matched no rule, and the fact was not stored
                return names
            state = result[1]
            try:
                action = start(h0, state)
                if action:
                    msg = action[1]
                    names.add(msg[2 : msg.index('"', 2)])
                    while msg := complete_and_next(h0, state):
                        names.add(msg[2 : msg.index('"', 2)])
            finally:
                retract(h0, f'{{"id":{n}}}')
            return names

        return match_text

    def match_shared(body: str, _holder: _Handles = holder) -> set[str]:
        n = next(ids)
        text = f'{{"id":{n},' + body
        names = set(always)
        for h in handles:
            run(h, text, n, names)
        return names

    return match_shared
