"""``stoprule schema policy|facts``: JSON Schemas for editors and scripts."""

from __future__ import annotations

import argparse
import json
from typing import IO

from stoprule.cli.common import policy_error
from stoprule.diagnostics import PolicyError
from stoprule.engine.packs import compile_policy, select_pack
from stoprule.language.schema_export import fact_json_schema, policy_json_schema

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Print a JSON Schema (draft 2020-12): `policy` describes pack files (for editors: "
        "`# yaml-language-server: $schema=policy.schema.json`), `facts` the selected pack's facts."
    )
    p.add_argument("kind", choices=("policy", "facts"), help="which schema")
    p.add_argument("--policy", metavar="PATH", help="policy pack for `facts` (default: selected as for eval)")


def run(args: argparse.Namespace, stdin: object, stdout: IO[str], stderr: IO[str]) -> int:
    if args.kind == "policy":
        schema = policy_json_schema()
    else:
        try:
            compiled = compile_policy(args.policy)
        except PolicyError as exc:
            return policy_error(exc, select_pack(args.policy), stderr)
        schema = fact_json_schema(compiled.schema, title=f"{compiled.name} fact")
    stdout.write(json.dumps(schema, indent=2) + "\n")
    return 0
