# The C accelerator's interface (src/stoprule/engine/_speedups.c), for type checkers: every argument
# of the Runner is built by stoprule.engine.speedups.c_backend from the evaluator's Plan.
from collections.abc import Callable
from typing import Any

from stoprule.engine.verdict import Verdict

FORMAT: int  # the program layout the module reads (stoprule.engine.speedups.FORMAT)

class Runner:
    def __new__(
        cls,
        schema: tuple[Any, ...],  # speedups.schema_program of the fact schema's root
        slots: tuple[Any, ...],  # speedups.projection_program: the projected slots
        lists: tuple[Any, ...],  # ... and lists
        handles: tuple[int, ...],  # this thread's engine handles, one per ruleset
        engine_library: str,  # the durable_rules C module's file (the same engine)
        helpers: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any], Callable[..., Any]],
        names: dict[str, tuple[int, int]],  # engine rule-name letter -> (first bit, count)
        always: tuple[int, ...],  # bits of the rules every fact matches
        ranked: tuple[tuple[Any, ...], ...],  # the rules in winner order: (bit, match, prototype, messages)
        stops: tuple[tuple[int, str], ...],  # the high-risk stops: (bit, id)
        filled: tuple[int, int, int],  # where a verdict's matches, high-risk stop and warnings go
        warn: Callable[[list[str]], tuple[dict[str, str], ...]],  # the words of unknown-field warnings
        keep: object,  # the owner of the handles, kept alive with the runner
        safe: int,  # the largest fact integer it takes (larger: left to Python)
        /,
    ) -> Runner: ...
    def run(self, fact: Any, /) -> Verdict | None: ...
    def project(self, fact: Any, /) -> tuple[dict[str, Any], str] | None: ...
