"""The engine's compile stages, after the language's checks (:mod:`stoprule.language.compiler`).

lower      conditions -> durable_rules JSON over a projected fact (:mod:`.lowering`)
build      chunk into rulesets and create them in the engine (:mod:`.lowering`)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from stoprule.engine.compiled import CompiledPolicy
from stoprule.engine.lowering import RULES_PER_RULESET, build_policy, lower_policy
from stoprule.language import compiler
from stoprule.language.checked import CheckedPolicy
from stoprule.language.compiler import Context

__all__ = ["RULES_PER_RULESET", "STAGES", "Compilation", "compile_pack", "run_stages"]


@dataclass(frozen=True)
class Compilation:
    """What :func:`compile_pack` produces: the checked policy (for analysis) and the
    compiled policy (for the evaluator)."""

    checked: CheckedPolicy
    compiled: CompiledPolicy


def stage_lower(ctx: Context) -> None:
    assert ctx.checked is not None
    ctx.lowered = lower_policy(ctx.checked, ctx.diags)


def stage_build(ctx: Context) -> None:
    assert ctx.checked is not None
    ctx.compiled = build_policy(ctx.checked, ctx.lowered, ctx.diags)


STAGES: list[tuple[str, Callable[[Context], None]]] = [
    *compiler.STAGES,
    ("lower", stage_lower),
    ("build", stage_build),
]


def run_stages(root: Path | str, until: str | None = None) -> None:
    """Run the stages up to and including ``until`` (all by default); raise
    :class:`~stoprule.diagnostics.PolicyError` on diagnostics. For tests of the stages themselves."""
    compiler.run(root, until, STAGES)


def compile_pack(root: Path | str) -> Compilation:
    """Run every stage over the pack at ``root``; raise :class:`~stoprule.diagnostics.PolicyError` on diagnostics."""
    ctx = compiler.run(root, None, STAGES)
    assert ctx.checked is not None and ctx.compiled is not None
    return Compilation(ctx.checked, ctx.compiled)
