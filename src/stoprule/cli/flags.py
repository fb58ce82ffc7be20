"""The flags the commands share: ``--policy`` and ``--format``, ``--jobs``, ``--backend``,
``--ledger`` (each command's ``add_arguments`` adds them).

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

__all__ = ["add_backend_flag", "add_jobs_flag", "add_ledger_flag", "add_policy_flags"]


def add_policy_flags(
    sp: argparse.ArgumentParser, default_format: str = "pretty", formats: tuple[str, ...] = ()
) -> None:
    """The flags every pack-reading command shares: ``--policy`` and ``--format``."""
    sp.add_argument(
        "--policy",
        metavar="PATH",
        help="policy pack directory (default: $STOPRULE_POLICY, ./.stoprule/policies/, then the bundled pack)",
    )
    sp.add_argument(
        "--format",
        choices=formats or ("json", "pretty"),
        default=default_format,
        help=f"output format (default: {default_format})",
    )


def add_jobs_flag(p: argparse.ArgumentParser, help_text: str) -> None:
    """``--jobs N`` / ``-j N`` (``eval``, ``audit --corpus``): see :mod:`stoprule.facts.batch`."""
    p.add_argument("--jobs", "-j", type=int, default=1, metavar="N", help=help_text)


def add_backend_flag(p: argparse.ArgumentParser, solver: str) -> None:
    """``--backend auto|exhaustive|solver`` (``audit``, ``diff``); ``solver`` says what it asks."""
    p.add_argument(
        "--backend",
        choices=["auto", "exhaustive", "solver"],
        default="auto",
        help=f"exhaustive: exact shares and regions (small packs); solver: {solver} (any size); "
        "auto (default): exhaustive when it finishes within a few seconds, else the solver",
    )


def add_ledger_flag(sp: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--ledger PATH``, shared by ``eval --run``, ``log`` and ``keys``."""
    sp.add_argument(
        "--ledger",
        metavar="PATH",
        help="ledger file or postgresql:// URL (default: $STOPRULE_LEDGER, then `ledger: {url: ...}` in "
        ".stoprule/config.yaml, then .stoprule/ledger.db; .stoprule/ found upward)",
    )
