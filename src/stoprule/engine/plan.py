"""The plan a faster evaluation backend is built from: what the Python path decides with, named
and typed, built once from a compiled pack (:meth:`stoprule.engine.evaluator.Evaluator.plan`).

A backend (:class:`~stoprule.engine.protocols.Backend`) reads nothing else of the evaluator:

    compiled   the compiled pack: fact schema, projection slots and lists, sets, rulesets
    winners    the rules in winner order, each with the verdict it gives when it wins
    stops      the high-risk stops in declaration order (engine name, id)
    always     engine names of the rules every fact matches (never sent to the engine)
    filled     where a verdict's matches, high-risk stop and warnings go
    engine     this thread's engine handles (:meth:`~stoprule.engine.durable.Engine.thread_handles`)
    check, interpret, decide   the Python path's steps: validate, match by the reference
               interpreter, decide and render over a set of matched engine names
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from stoprule.engine.compiled import CompiledPolicy
from stoprule.engine.verdict import Match, Verdict
from stoprule.language.templates import Template

__all__ = ["Plan", "WinningRule"]


@dataclass(frozen=True)
class WinningRule:
    """One rule as it decides when it wins: the verdict with its message, review reason, matches,
    high-risk stop and warnings still to be put in (``prototype``), and the message templates by
    their position in the verdict (``messages``)."""

    engine_name: str
    match: Match
    prototype: Verdict
    messages: tuple[tuple[int, Template], ...]


@dataclass(frozen=True)
class Plan:
    """A compiled pack as a backend evaluates it (see the module's docstring)."""

    compiled: CompiledPolicy
    winners: tuple[WinningRule, ...]
    stops: tuple[tuple[str, str], ...]
    always: tuple[str, ...]
    filled: tuple[int, int, int]
    thread_handles: Callable[[], tuple[object, list[int]]]
    engine_library: str
    unknown_warnings: Callable[[list[str]], Iterable[dict[str, str]]]
    check: Callable[[Any], tuple[dict[str, Any], list[dict[str, str]]]]
    interpret: Callable[[dict[str, Any]], set[str]]
    decide: Callable[[dict[str, Any], set[str], tuple[dict[str, str], ...]], Verdict]
