"""The package version: one place, imported by ``stoprule``, the pack cache and the CLI.

Kept in a module of its own (no imports) so that nothing inside the package needs to
import the package ``__init__`` for it; ``pyproject.toml`` repeats it, and a test
checks that the two agree.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
