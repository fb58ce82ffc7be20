"""The session's mode: ``autonomous`` (nobody answers) or ``interactive`` (a person is there).

Decided in this order, the first that says something wins, and the provenance names it:

1. the user's switch for this session: a line ``stoprule: mode=autonomous|interactive|auto``
   in one of the user's own prompts (the transcript's human turns; the latest counts);
2. the project's ``session: mode:`` when it is not ``auto``;
3. what the harness says (checked on the pinned binaries, docs/agents.md):
   Claude Code ``CLAUDE_CODE_SESSION_ATTENDED`` (1/0), else ``CLAUDE_CODE_ENTRYPOINT``
   (``cli``: the TUI; ``sdk-*``: ``claude -p`` and the SDKs), else a Stop payload's
   ``permission_mode`` of ``bypassPermissions``/``dontAsk``; Codex: the rollout's
   ``session_meta`` ``source`` (``exec``: ``codex exec``; ``cli``/``vscode``: a person);
   OpenCode: the plugin's ``session_mode`` (``opencode run`` or the server API);
4. otherwise ``interactive``: a question is the user's to answer unless something says nobody
   is there (docs/agents.md, "Session modes").

On the cold path (tools/import_graph.py): no imports.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["MODES", "resolve"]

MODES = ("autonomous", "interactive")
_ATTENDED = {"1": "interactive", "true": "interactive", "0": "autonomous", "false": "autonomous"}
_UNATTENDED_PERMISSIONS = ("bypassPermissions", "dontAsk")


def harness_says(harness: str, raw: Mapping[str, Any], env: Mapping[str, str]) -> tuple[str, str] | None:
    """``(mode, source)`` from the payload and the hook's environment (set by the harness), or None."""
    attended = env.get("CLAUDE_CODE_SESSION_ATTENDED")
    if attended is not None and attended.strip().lower() in _ATTENDED:
        return _ATTENDED[attended.strip().lower()], f"CLAUDE_CODE_SESSION_ATTENDED={attended.strip()}"
    entry = env.get("CLAUDE_CODE_ENTRYPOINT")
    if entry:
        if entry == "cli":
            return "interactive", "CLAUDE_CODE_ENTRYPOINT=cli"
        if entry.startswith("sdk"):
            return "autonomous", f"CLAUDE_CODE_ENTRYPOINT={entry}"
    declared = raw.get("session_mode")
    if harness == "opencode" and declared in MODES:
        return str(declared), f"the OpenCode plugin: session_mode={declared}"
    permission = raw.get("permission_mode")
    if isinstance(permission, str) and permission in _UNATTENDED_PERMISSIONS:
        return "autonomous", f"payload permission_mode={permission}"
    return None


def resolve(
    harness: str,
    raw: Mapping[str, Any],
    env: Mapping[str, str],
    setting: str | None,
    transcript: Mapping[str, Any] | None,
) -> tuple[str, str]:
    """``(mode, source)``: ``transcript`` is the transcript reader's state (its ``mode_switch``
    and ``mode_signal``), ``setting`` the config's ``session.mode``."""
    scan = transcript or {}
    switch = scan.get("mode_switch")
    if switch in MODES:
        return str(switch), f"the user's switch in a prompt: stoprule: mode={switch}"
    if setting in MODES:
        return str(setting), f"config session.mode: {setting}"
    said = harness_says(harness, raw, env)
    if said is not None:
        return said
    signal = scan.get("mode_signal")
    if isinstance(signal, list) and len(signal) == 2 and signal[0] in MODES:
        return str(signal[0]), str(signal[1])
    return "interactive", "the harness says nothing: interactive (the default)"
