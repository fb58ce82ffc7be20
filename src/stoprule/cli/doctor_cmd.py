"""``stoprule doctor``: is the stop hook wired, and does it answer?

For each harness whose config holds stoprule's entry (the project's shared file, its personal
one, the user's; for OpenCode: the generated plugin, which must be the one this stoprule
generates): the entry, whether its command resolves on the PATH a harness started outside this
venv has (this venv's ``bin`` removed: that is how a harness started from a desktop or another
shell runs it), then one synthetic stop run through that very command the same way (``sh -c``,
payload on stdin, project root as cwd, 30 s timeout) and its answer read by the harness's
rules: a synthetic stop must be allowed by a decision (a hook that would block it would block
every stop of a clean session; one that failed open decided nothing). A hook wired in more than
one file runs more than once per stop: that fails too. Then the blocker tools' MCP server of
every harness (:mod:`stoprule.cli.doctor_mcp`). Also: Python version, ``.stoprule/`` and its
config, the pack compiles. Which guards are wired: for each harness config with stoprule's stop
hook, the guard on each event that can veto a tool call (a missing one fails), Claude Code's
``permissions.deny`` rules, the user's guard switch; one synthetic refused call run through the
guard's command. The user's ``/blockers`` (Claude Code, Gemini CLI): the prompt hook and the
command file it reads. Antigravity's hooks files are checked whole, as Antigravity loads them (one
error drops every hook in the file, silently): each error by file, line and field; so is the
Antigravity plugin ``stoprule plugin antigravity`` wrote (its ``plugin.json`` too: one error there
and the folder is no plugin), whose synthetic stop runs from the plugin's folder, as Antigravity
starts it. Exit 0 when every check passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from typing import IO, Any

from stoprule.agent.hook.agy_hooks import Finding, check_file, check_manifest
from stoprule.agent.hook.wiring import (
    AGY_PLUGIN,
    COMMANDS,
    EXTRA_EVENTS,
    GUARD_EVENTS,
    OPENCODE_PLUGIN,
    SCOPES,
    TARGETS,
    deny_rules,
    find_entry,
    find_guard,
    opencode_plugin,
)
from stoprule.cli.doctor_mcp import check_mcp, path_remedy
from stoprule.cli.places import git_root, harness_env
from stoprule.config.reader import read_settings
from stoprule.diagnostics import EXIT_NOT_OK, EXIT_OK, PolicyError
from stoprule.engine.batches import describe_backend
from stoprule.engine.packs import load_policy, select_pack
from stoprule.project import GUARD_OFF_FILE, find_project

__all__ = ["SYNTHETIC", "add_arguments", "run"]

SYNTHETIC: dict[str, dict[str, Any]] = {
    "claude-code": {"session_id": "stoprule-doctor", "hook_event_name": "Stop", "stop_hook_active": False,
                    "last_assistant_message": "doctor check", "transcript_path": None},
    "codex": {"session_id": "stoprule-doctor", "turn_id": "doctor", "hook_event_name": "Stop", "model": "doctor",
              "permission_mode": "default", "stop_hook_active": False, "last_assistant_message": "doctor check",
              "transcript_path": None},
    "gemini": {"session_id": "stoprule-doctor", "hook_event_name": "AfterAgent", "prompt": "doctor",
               "prompt_response": "doctor check", "stop_hook_active": False, "transcript_path": None},
    "cursor": {"conversation_id": "stoprule-doctor", "generation_id": "doctor", "hook_event_name": "stop",
               "status": "completed", "loop_count": 0},
    "copilot": {"sessionId": "stoprule-doctor", "timestamp": 0, "stopReason": "end_turn"},
    "antigravity": {"conversationId": "stoprule-doctor", "terminationReason": "doctor", "fullyIdle": True,
                    "executionNum": 1, "transcriptPath": None},
    "opencode": {"hook_event_name": "session.idle", "session_id": "stoprule-doctor", "loop_count": 0,
                 "last_assistant_message": "doctor check", "todos": [], "turns": 1},
}  # fmt: skip


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Check the hook wiring of each configured harness and run one synthetic stop through it."
    p.add_argument("--policy", metavar="PATH", help="policy pack to check (default: as the hook selects it)")


def _line(stdout: IO[str], ok: bool, text: str) -> bool:
    stdout.write(f"{'ok  ' if ok else 'FAIL'} {text}\n")
    return ok


def _blocked(harness: str, obj: dict[str, Any]) -> str | None:
    """The instruction of a blocking answer (by the harness's rules), else None."""
    if harness == "cursor":
        return obj.get("followup_message") or None
    if obj.get("decision") in ("block", "deny") or (harness == "antigravity" and obj.get("decision") == "continue"):
        return str(obj.get("reason") or "(no reason)")
    return None


def _dirty(root: str) -> bool:
    try:
        p = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0 and bool(p.stdout.strip())


def _failed_open(stderr: str) -> str | None:
    """What went wrong when the hook's diagnostics say it could not decide and allowed the stop."""
    lines = stderr.splitlines()
    for i, text in enumerate(lines):
        if re.match(r"stoprule hook: [\w-]+: allow \(error \(open\)\)", text) or "internal error" in text:
            detail = lines[i + 1] if i + 1 < len(lines) and "internal error" not in text else text
            return detail.removeprefix("stoprule hook: ")[:300]
    return None


def _synthetic(command: str, harness: str, root: str, run_in: str | None = None) -> tuple[bool, str]:
    payload = dict(SYNTHETIC[harness], cwd=root)
    try:
        p = subprocess.run(
            ["/bin/sh", "-c", command],
            input=json.dumps(payload).encode(),
            capture_output=True,
            cwd=run_in or root,
            timeout=30,
            env=harness_env(),
        )
    except subprocess.TimeoutExpired:
        return False, "no answer within 30 s"
    out = p.stdout.decode("utf-8", "replace").strip()
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode != 0:
        return False, f"exit code {p.returncode} (a hook must exit 0): {err[:200]}"
    broken = _failed_open(err)
    if broken is not None:
        return False, f"the hook could not decide and allowed the stop (fail open): {broken}"
    if not out:
        return True, "allow (empty output)"
    try:
        obj = json.loads(out)
    except ValueError:
        return False, f"stdout is not one JSON object: {out[:200]!r}"
    if not isinstance(obj, dict):
        return False, "stdout is not a JSON object"
    reason = _blocked(harness, obj)
    if reason is not None:
        why = " (this working tree has uncommitted changes)" if _dirty(root) else ""
        return False, f"a synthetic stop is blocked{why}: {reason[:300]}"
    return True, f"allow: {json.dumps(obj)[:200]}"


def _check_command(stdout: IO[str], name: str, command: str, root: str, run_in: str | None = None) -> bool:
    """Does the hook's command resolve without this venv, and allow a synthetic stop (run in
    ``run_in``, default the project root)?"""
    exe = shlex.split(command)[0]
    resolved = shutil.which(exe, path=harness_env()["PATH"])
    where = resolved or f"nothing on a PATH without this venv: {path_remedy(name)}"
    good = _line(stdout, resolved is not None, f"{name}: {exe} resolves to {where}")
    ok, what = _synthetic(command, name, root, run_in)
    return _line(stdout, ok, f"{name}: synthetic stop: {what}") and good


def _synthetic_guard(command: str, harness: str, root: str) -> tuple[bool, str]:
    """Run the guard's command on a call it must refuse (the agent turning blocker logging off), in
    a scratch folder with its own state directory: the refusal is journaled there, not in the project."""
    with tempfile.TemporaryDirectory(prefix="stoprule-doctor-") as scratch:
        call: dict[str, Any] = {
            "tool_name": "Bash",
            "tool_input": {"command": "stoprule blockers off"},
            "cwd": scratch,
            "session_id": "stoprule-doctor",
            "hook_event_name": "PreToolUse",
        }
        if harness == "copilot":
            call = {
                "sessionId": "stoprule-doctor",
                "toolName": "bash",
                "cwd": scratch,
                "toolArgs": {"command": "stoprule blockers off"},
            }
        elif harness == "cursor":
            call = {
                "conversation_id": "stoprule-doctor",
                "command": "stoprule blockers off",
                "cwd": scratch,
                "hook_event_name": "beforeShellExecution",
            }
        env = {k: v for k, v in harness_env().items() if k not in ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR")}
        env["STOPRULE_STATE_DIR"] = scratch
        try:
            p = subprocess.run(
                ["/bin/sh", "-c", command],
                input=json.dumps(call).encode(),
                capture_output=True,
                cwd=scratch,
                timeout=30,
                env=env,
            )
        except subprocess.TimeoutExpired:
            return False, "no answer within 30 s"
    out = p.stdout.decode("utf-8", "replace").strip()
    if p.returncode != 0 or "stoprule blockers off" not in out:
        said = out[:200] or p.stderr.decode("utf-8", "replace")[:200]
        return False, f"it did not refuse `stoprule blockers off` (exit {p.returncode}): {said!r}"
    return True, "refuses `stoprule blockers off`"


def _check_guards(stdout: IO[str], name: str, config: dict[str, Any], path: str, root: str) -> bool:
    """The guard on each of the harness's vetoing events, its deny rules (Claude Code), a synthetic refusal."""
    t = TARGETS[name]
    wired = {ev: find_guard(config, t, ev) for ev, _ in GUARD_EVENTS.get(name, ())}
    missing = [ev for ev, cmd in wired.items() if cmd is None]
    good = True
    if missing:
        good = _line(
            stdout,
            False,
            f"{name}: no guard on {', '.join(missing)} in {path}: an agent can change "
            f"stoprule's files unseen (run `stoprule init --harness {name}`)",
        )
    elif wired:
        _line(stdout, True, f"{name}: guard on {', '.join(wired)} in {path}")
    if name == "claude-code":
        perms = config.get("permissions")
        deny = perms.get("deny") if isinstance(perms, dict) else None
        have = set(deny) if isinstance(deny, list) else set()
        lacking = [r for r in deny_rules() if r not in have]
        if lacking:
            good &= _line(
                stdout,
                False,
                f"{name}: {len(lacking)} of stoprule's permissions.deny rules missing in "
                f"{path} (run `stoprule init --harness {name}`)",
            )
        else:
            _line(stdout, True, f"{name}: {len(deny_rules())} permissions.deny rules in {path}")
    command = next((c for c in wired.values() if c), None)
    if command is not None:
        ok, what = _synthetic_guard(command, name, root)
        good &= _line(stdout, ok, f"{name}: synthetic tool call through the guard: {what}")
    return good


def _check_blockers_command(stdout: IO[str], name: str, config: dict[str, Any], path: str, root: str) -> bool:
    """The user's ``/blockers``: the prompt hook beside the stop hook, and the command it reads."""
    event = EXTRA_EVENTS[name]["prompt"]
    user = os.path.realpath(path) == os.path.realpath(TARGETS[name].path(root, "user"))
    rel = COMMANDS[name][1 if user else 0]
    command = os.path.join(os.path.expanduser("~") if user else root, *rel.split("/"))
    hook = find_entry(config, TARGETS[name], event)
    if hook is None or not os.path.isfile(command):
        missing = [f"no {event} hook in {path}"] if hook is None else []
        missing += [] if os.path.isfile(command) else [f"no {command}"]
        return _line(
            stdout,
            False,
            f"{name}: the user's /blockers does not work: {'; '.join(missing)} (run `stoprule init --harness {name}`)",
        )
    return _line(stdout, True, f"{name}: the user's /blockers: {event} hook and {command}")


def _show_findings(stdout: IO[str], findings: list[Finding]) -> bool:
    """Antigravity's findings in a file, each on its line (an error fails); True when none is an error."""
    for f in findings:
        if f.error:
            _line(stdout, False, f"antigravity: {f.render()}")
        else:
            stdout.write(f"warn antigravity: {f.render()}\n")
    return not any(f.error for f in findings)


def _check_agy_file(stdout: IO[str], path: str) -> bool:
    """Antigravity's hooks file, every entry, as Antigravity loads it: one error drops the whole
    file silently (each error named by line and field); a warning names a hook that never runs."""
    loads = _show_findings(stdout, check_file(path))
    what = (
        "loads (Antigravity's hooks.json rules)"
        if loads
        else "would be dropped whole by Antigravity (no hook in it runs)"
    )
    return _line(stdout, loads, f"antigravity: {path} {what}")


def _check_agy_plugins(stdout: IO[str], root: str) -> tuple[list[tuple[str, str]], bool]:
    """stoprule's Antigravity plugin folders (project, user): the manifest and the hooks file, each
    checked whole as Antigravity loads it, then one synthetic stop from the plugin's folder (where
    Antigravity starts a plugin's hooks): ((hooks file, command) of each, all good)."""
    project, users = AGY_PLUGIN
    home = os.path.expanduser("~")
    found: list[tuple[str, str]] = []
    good = True
    for folder in (os.path.join(root, *project.split("/")), *(os.path.join(home, *u.split("/")) for u in users)):
        if not os.path.isdir(folder):
            continue
        manifest = os.path.join(folder, "plugin.json")
        if not _show_findings(stdout, check_manifest(manifest)):
            good = _line(stdout, False, f"antigravity: {folder} is not loaded as a plugin (none of its hooks run)")
            continue
        with open(manifest, encoding="utf-8") as fh:
            if json.load(fh).get("disabled") is True:
                stdout.write(f"warn antigravity: {manifest}: disabled: the plugin's hooks do not run\n")
                continue
        hooks = os.path.join(folder, "hooks.json")
        if not os.path.isfile(hooks):
            good = _line(stdout, False, f"antigravity: no {hooks}: run `stoprule plugin antigravity` again")
            continue
        if not _check_agy_file(stdout, hooks):
            good = False
            continue
        with open(hooks, encoding="utf-8") as fh:
            command = find_entry(json.load(fh), TARGETS["antigravity"])
        if command is None:
            good = _line(stdout, False, f"antigravity: no stoprule Stop hook in {hooks}")
            continue
        found.append((hooks, command))
        _line(stdout, True, f"antigravity: Stop hook in the plugin {folder}: {command}")
        good &= _check_command(stdout, "antigravity", command, root, run_in=folder)
    return found, good


def _check_opencode(stdout: IO[str], root: str) -> tuple[list[tuple[str, str]], bool]:
    """OpenCode's generated plugins (project, user): ((path, command) of each, all good)."""
    found: list[tuple[str, str]] = []
    good = True
    for user in (False, True):
        rel = OPENCODE_PLUGIN[1 if user else 0]
        path = os.path.join(os.path.expanduser("~") if user else root, *rel.split("/"))
        if not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read(1 << 20)
            m = re.search(r"^const COMMAND = (.*?) // argv of stoprule$", text, re.M)
            argv = json.loads(m.group(1)) if m else None
        except (OSError, ValueError) as exc:
            good = _line(stdout, False, f"opencode: {path} unreadable: {exc}")
            continue
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
            good = _line(
                stdout,
                False,
                f"opencode: {path} is not the plugin stoprule generates: run `stoprule init --harness opencode`",
            )
            continue
        found.append((path, shlex.join(argv)))
        g = re.search(r"^const GUARD = (.*?) // argv of the guard", text, re.M)
        guard = json.loads(g.group(1)) if g else []
        current = text == opencode_plugin(argv, guard if isinstance(guard, list) else None)
        state = (
            "plugin"
            if current
            else "plugin differs from the one this stoprule generates (run `stoprule init --harness opencode`):"
        )
        good &= _line(stdout, current, f"opencode: {state} {path}: {shlex.join(argv)} hook opencode")
        if guard:
            _line(stdout, True, f"opencode: guard on tool.execute.before: {shlex.join(guard)}")
            ok, what = _synthetic_guard(shlex.join(guard), "opencode", root)
            good &= _line(stdout, ok, f"opencode: synthetic tool call through the guard: {what}")
        else:
            good &= _line(stdout, False, "opencode: the plugin has no guard (run `stoprule init --harness opencode`)")
        good &= _check_command(stdout, "opencode", shlex.join([*argv, "hook", "opencode"]), root)
    return found, good


def run(args: argparse.Namespace, stdin: object, stdout: IO[str], stderr: IO[str]) -> int:
    good = _line(stdout, sys.version_info >= (3, 10), f"Python {sys.version.split()[0]} ({sys.executable})")
    state = find_project()
    root = git_root(os.getcwd()) or (os.path.dirname(state) if state else os.getcwd())
    good &= _line(stdout, state is not None, f".stoprule/: {state or 'none found upward (run stoprule init)'}")
    cfg = os.path.join(state, "config.yaml") if state else None
    try:
        hook = read_settings(cfg).hook
        _line(
            stdout,
            True,
            f"config {cfg or '(defaults)'}: mode {hook['mode']}, fail {hook['fail']}, "
            f"loop cap {hook['loop_cap']}, ledger {'on' if hook['ledger'] else 'off'}",
        )
    except PolicyError as exc:
        good = _line(stdout, False, f"config {cfg}:\n{exc.render()}")
    pack = select_pack(args.policy)
    try:
        ev = load_policy(pack)
        _line(stdout, True, f"pack {pack} compiles ({ev.digest[:19]}...)")
        _line(stdout, True, describe_backend())
    except PolicyError as exc:
        good = _line(stdout, False, f"pack {pack} does not compile:\n{exc.render()}")
    found: dict[str, list[tuple[str, str]]] = {}  # harness -> (where, command) of each entry
    for name, t in TARGETS.items():
        paths = dict.fromkeys(t.path(root, scope) for scope in SCOPES)  # a harness without a personal file: 2
        for path in paths:
            if not os.path.exists(path):
                continue
            if name == "antigravity" and not _check_agy_file(stdout, path):
                good = False
                continue
            try:
                with open(path, encoding="utf-8") as fh:
                    config = json.load(fh)
                command = find_entry(config, t) if isinstance(config, dict) else None
            except (OSError, ValueError) as exc:
                good = _line(stdout, False, f"{name}: {path} unreadable: {exc}")
                continue
            if command is None:
                continue
            found.setdefault(name, []).append((path, command))
            _line(stdout, True, f"{name}: {t.event} hook in {path}: {command}")
            good &= _check_command(stdout, name, command, root)
            good &= _check_guards(stdout, name, config, path, root)
            if name in COMMANDS:
                good &= _check_blockers_command(stdout, name, config, path, root)
    plugins, plugins_good = _check_opencode(stdout, root)
    found.update({"opencode": plugins} if plugins else {})
    agy, agy_good = _check_agy_plugins(stdout, root)
    if agy:
        found.setdefault("antigravity", []).extend(agy)
    good &= plugins_good and agy_good
    for name, entries in found.items():
        # Claude Code runs an identical command found in several settings files once
        runs = len({c for _, c in entries}) if name == "claude-code" else len(entries)
        if runs > 1:
            where = ", ".join(p for p, _ in entries)
            twice = f"{name}: stoprule's hook is wired in {where}: every stop runs it {runs} times; keep one"
            good = _line(stdout, False, twice + " (`init --shared`: the team's, `--local`: this clone's)")
    if not found:
        good = _line(stdout, False, "no harness has stoprule's hook: run `stoprule init --harness HARNESS`")
    if state is not None:
        off = os.path.exists(os.path.join(state, GUARD_OFF_FILE))
        _line(
            stdout,
            True,
            "guard switch: "
            + ("off (the user's `stoprule guard off`; `stoprule guard on` undoes it)" if off else "on"),
        )
    good &= check_mcp(root, set(found), harness_env()["PATH"], _line, stdout)
    return EXIT_OK if good else EXIT_NOT_OK
