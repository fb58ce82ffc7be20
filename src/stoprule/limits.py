"""Every limit a policy pack is held to, in one place (documented in docs/policy-language.md, "Limits").

A pack can arrive in a pull request: whatever its bytes, ``stoprule check`` answers with
diagnostics in bounded time and memory. The limits below are generous for real packs
(the default pack uses a few percent of each) and keep every input far from what makes
PyYAML, Python's recursion or the durable_rules C engine fail. Each is reported with its
own diagnostic code (``limit.*``) at the file and line that exceeds it.

Engine limits, measured on durable_rules 2.0.28 (see tests/test_pack_limits.py):

- a fact holds at most 252 top-level properties (the engine adds ``sid`` and ``id`` and
  refuses the 255th with error 302); objects in a list are parsed on their own;
- a ``$mt`` pattern with 127 ``.*`` or a class of more than 4096 characters crashes the
  process (SIGSEGV); ten ``.*a`` exceed its 4096 automaton states (error 503), and two
  negated classes after ``.*`` conflict (error 507);
- integers are C ``long long`` (``$add``/``$sub`` wrap around) and a comparison of an
  integer with a float is done in C ``double``.

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""

from __future__ import annotations

__all__ = [
    "ENGINE_MAX_FACT_PROPERTIES",
    "MAX_CONDITION_DEPTH",
    "MAX_CONDITION_NODES",
    "MAX_FILE_BYTES",
    "MAX_GLOB_CLASS_CHARS",
    "MAX_GLOB_LENGTH",
    "MAX_GLOB_STARS",
    "MAX_PACK_ALTERNATIVES",
    "MAX_PACK_BYTES",
    "MAX_PACK_FILES",
    "MAX_RULES",
    "MAX_SET_MEMBERS",
    "MAX_STRING_LITERAL",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "MAX_YAML_SCALAR_CHARS",
    "SAFE_INT",
]

# ---- files and YAML (stage load, before anything is built from the text)
MAX_FILE_BYTES = 1 << 20  # one pack file: 1 MiB
MAX_PACK_BYTES = 8 << 20  # all files of a pack together: 8 MiB
MAX_PACK_FILES = 256  # YAML files in a pack directory
MAX_YAML_DEPTH = 100  # nested mappings/sequences in one file
MAX_YAML_NODES = 200_000  # nodes of one file with every alias expanded
MAX_YAML_SCALAR_CHARS = 8_000_000  # characters of all scalars of one file, aliases expanded

# ---- rules and conditions (stages resolve and typecheck)
MAX_RULES = 2_000  # rules plus high-risk stops in a pack
MAX_CONDITION_DEPTH = 64  # nesting of one resolved condition (named conditions expanded)
MAX_CONDITION_NODES = 20_000  # nodes of one resolved condition (a named condition counts at each use)
MAX_SET_MEMBERS = 1_000  # values of one in/not_in list or named set
MAX_STRING_LITERAL = 4_096  # characters of one string literal in a condition
MAX_GLOB_LENGTH = 256  # characters of one glob (or starts_with/ends_with argument)
MAX_GLOB_STARS = 16  # '*' wildcards in one glob (bounds the audit automaton)
MAX_GLOB_CLASS_CHARS = 1_024  # characters one [...] class stands for
SAFE_INT = (1 << 53) - 1  # integer literals and offsets in conditions, and fact integers: |n| <= 2^53 - 1

# ---- the engine (stages lower and build)
MAX_PACK_ALTERNATIVES = 50_000  # engine alternatives (DNF conjunctions) of all rules together
ENGINE_MAX_FACT_PROPERTIES = 252  # projected properties one ruleset reads (engine error 302 above)

# a project's config file larger than this (or not a regular file) is refused unread
MAX_CONFIG_BYTES = 1 << 20
