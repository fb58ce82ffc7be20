"""The start of the command as ``stoprule init`` wires it into a harness:
``PYTHON -I -S /path/to/stoprule/launch.py ARGS``.

A hook runs a fresh process at every stop (the tool-call guard at every tool call), and a
console script's start is the interpreter's plus ``site``'s (its ``.pth`` files, the venv:
~3 ms) plus the script's own ``import re``. ``launch.py`` starts the command without both:

- ``-I``: no ``PYTHON*`` variable, no user site, not the current or the script's folder on the
  path (a project's files never shadow a module);
- ``-S``: no ``site``: the folder holding the ``stoprule`` package goes on the path instead (in a
  normal install that is site-packages, which holds its dependencies too).

A top-level module found nowhere on that path (a dependency in another folder: an editable
install's venv, the system's packages) runs ``site``'s start once, then is searched again
(:class:`SiteOnMiss`), so the command finds every module the console script would.
``launch.py`` itself stays a few lines: a script is compiled at every start (its bytecode is
never kept), this module's is.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from typing import Any

__all__ = ["SiteOnMiss", "start"]


class SiteOnMiss:
    """The last finder on ``sys.meta_path``: a top-level module no other finder found runs
    ``site.main()`` (once; the finder then leaves) and is searched for again."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if path is not None or SiteOnMiss not in sys.meta_path:  # a submodule: its package's path decides
            return None
        sys.meta_path.remove(SiteOnMiss)
        import site

        site.main()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec: ModuleSpec | None = find(name, None, target) if find is not None else None
            if spec is not None:
                return spec
        return None


def start() -> None:
    """With ``-S``, :class:`SiteOnMiss` after every finder."""
    if sys.flags.no_site:
        sys.meta_path.append(SiteOnMiss)
