"""The console's pages and actions in process (starlette's TestClient) over a ledger recorded by
real hook runs (recorded.py): what each page shows, that agent-written text stays text, who may
read and who may resolve, and that a blocker resolved here is resolved for the CLI too."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path

import pytest
from consolehelp import KEY, PORT, console
from recorded import OTHER, QUESTION, SESSION, SOFT_QUESTION, Project
from starlette.testclient import TestClient

from clirunner import process_env

STATIC = Path(__file__).resolve().parents[2] / "src" / "stoprule" / "console" / "static"


def text(html: str) -> str:
    """The page's visible text, roughly: tags dropped, whitespace folded (entities kept)."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def open_blockers(pr: Project) -> list[dict]:
    out = pr.cli("blockers", "list", "--all", "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["open"]


# ---------------------------------------------------------------------- runs


def test_the_run_list_shows_each_session_with_its_harness_stops_verdict_blockers_and_chain(client) -> None:
    page = client.get("/")
    assert page.status_code == 200
    rows = {m.group(1): text(m.group(0)) for m in re.finditer(r'<tr data-key="([^"]+)".*?</tr>', page.text, re.S)}
    assert set(rows) == {SESSION, OTHER}
    cc = rows[SESSION]
    assert "claude-code" in cc and "user_review open_blockers" in cc and "verified" in cc
    assert re.search(r"proj \S+ 4 2 ", cc), cc  # project, started, 4 stops, 2 blocked attempts
    assert re.search(r"open_blockers 1 verified", cc), cc  # one open blocker
    assert "codex" in rows[OTHER] and "pass ok" in rows[OTHER]


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ("", {SESSION, OTHER}),
        ("?harness=codex", {OTHER}),
        ("?state=open_blockers", {SESSION}),
        ("?state=not_ok", {SESSION}),
        ("?state=blocked", {SESSION}),
        ("?state=tamper", set()),
        ("?verdict=pass", {OTHER}),
        ("?q=CX-CONSOLE", {OTHER}),
        ("?q=nothing-like-it", set()),
    ],
)
def test_the_run_list_filters(client, query: str, shown: set[str]) -> None:
    page = client.get("/" + query).text
    assert set(re.findall(r'<tr data-key="([^"]+)"', page)) == shown


def test_the_dag_has_the_blocked_attempt_and_its_retry(client) -> None:
    graph = client.get("/api/graph", params={"run": SESSION}).json()
    kinds = {n["id"]: (n["kind"], n["retryable"], n["attempt"]) for n in graph["nodes"]}
    assert kinds == {
        "n1": ("step", False, 1),
        "n2": ("blocked_attempt", True, 1),
        "n3": ("step", False, 2),
        "n4": ("blocked_attempt", False, 1),
    }
    assert {(e["from"], e["to"], e["kind"]) for e in graph["edges"]} == {
        ("n1", "n2", "next"),
        ("n2", "n3", "retry"),
        ("n3", "n4", "next"),
    }
    assert graph["tip"] == "n4"
    page = text(client.get("/run", params={"run": SESSION}).text)
    assert "blocked_attempt (retryable) escape_hatch blocked_report_required" in page
    assert "n2 retry" in page and "Chain verified : 4 events" in page and "Harness claude-code" in page


def test_a_decision_shows_verdict_rules_message_facts_and_provenance(client) -> None:
    blocked = text(client.get("/decision", params={"run": SESSION, "node": "n2"}).text)
    assert "escape_hatch blocked_report_required" in blocked and "retried by n3" in blocked
    assert "escape_hatch.blocked_report_required won" in blocked  # the winner, first of the matched rules
    assert "Turn 8 of 10" in blocked  # the message the agent got
    assert "sha256:" in blocked
    page = client.get("/decision", params={"run": SESSION, "node": "n3"}).text
    retry = text(page)
    assert "after n2 as its retry" in retry and "attempt 2" in retry
    assert "its copy of the fact is the one the ledger recorded" in retry and "Harness: claude-code" in retry
    rows = {
        m.group(1): text(m.group(0))
        for m in re.finditer(r"<tr class=\"\w*\">\s*<td><code>(\w+)</code>.*?</tr>", page, re.S)
    }
    assert rows["turn"].endswith("state declared")  # declared with `stoprule facts set`
    assert rows["taskBoundaryStop"].endswith("hook (stopping) observed")  # from the harness's payload
    assert "blocked_report" in rows and rows["blocked_report"].endswith("blockers declared")  # the agent filed it
    assert rows["availableTasks"].endswith("transcript (available_tasks) observed")


def test_a_decision_fragment_is_only_the_panel(client) -> None:
    frag = client.get("/decision", params={"run": SESSION, "node": "n1", "fragment": "1"}).text
    assert frag.lstrip().startswith('<section class="decision-body"') and "<html" not in frag


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/run?run=nope", 404),
        ("/decision?run=" + SESSION + "&node=n99", 404),
        ("/run", 400),
        ("/api/graph?run=nope", 404),
    ],
)
def test_unknown_runs_and_nodes_are_404(client, url: str, status: int) -> None:
    assert client.get(url).status_code == status


def test_a_tampered_run_is_shown_broken(project: Project) -> None:
    db = sqlite3.connect(project.ledger())
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f"DROP TRIGGER {name}")
    db.execute("UPDATE events SET body = replace(body, 'open_blockers', 'ok') WHERE run = ? AND seq = 4", (SESSION,))
    db.commit()
    db.close()
    with process_env(project.env, project.root), TestClient(console(project), base_url=f"http://127.0.0.1:{PORT}") as c:
        c.cookies.set(f"stoprule_console_{PORT}", KEY)
        assert set(re.findall(r'<tr data-key="([^"]+)"', c.get("/?state=tamper").text)) == {SESSION}
        run = text(c.get("/run", params={"run": SESSION}).text)
        assert "BROKEN" in run and "first broken link at event 4" in run
        assert "BROKEN" in text(c.get("/verify").text)


# ---------------------------------------------------------------------- agent-written text


@pytest.mark.parametrize("url", ["/blockers", "/reports", f"/decision?run={SESSION}&node=n4"])
def test_html_written_by_the_agent_is_text(client, url: str) -> None:
    page = client.get(url).text
    assert "<script>document.title" not in page and "<img src=x" not in page
    assert "&lt;script&gt;document.title" in page  # shown, as text


def test_every_page_forbids_inline_script(client) -> None:
    for url in ("/", "/blockers", "/reports", "/policy", f"/run?run={SESSION}"):
        csp = client.get(url).headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert "<script>" not in client.get(url).text  # only <script src=...>


# ---------------------------------------------------------------------- blockers and reports


def test_the_board_shows_hard_blockers_to_decide_and_soft_ones_with_the_agents_choice(client) -> None:
    page = client.get("/blockers").text
    board = text(page)
    assert "1 open of 2 blockers" in board
    assert "Hard blockers (require your decision)" in board and "Soft blockers (the agent chose)" in board
    assert "Blocks: Yes" in board and "Choosing the cache backend &lt;b&gt;now&lt;/b&gt;" in board
    assert SOFT_QUESTION in board and "cache.py ✓" in board and "Reasoning: Matches the module it wraps" in board
    assert page.count('action="/blockers/resolve"') == 1  # only the open hard blocker has the form


def test_resolving_in_the_console_is_resolving_for_the_cli(client, project: Project) -> None:
    (hard,) = open_blockers(project)
    assert hard["question"] == QUESTION
    page = client.get("/blockers").text
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)
    form = {"csrf": csrf, "id": hard["id"], "project": "proj", "note": "use <b>SQLite</b>"}
    done = client.post("/blockers/resolve", data=form, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == f"/blockers?project=proj&resolved={hard['id']}"
    assert open_blockers(project) == []
    listed = project.cli("blockers", "list", "--all").stdout
    assert f"[x] {hard['id']}" in listed
    record = (project.root / ".stoprule" / "blockers" / "blockers.jsonl").read_text().splitlines()
    assert json.loads(record[-1])["op"] == "resolve" and json.loads(record[-1])["note"] == "use <b>SQLite</b>"
    after = text(client.get("/blockers?show=all").text)
    assert "0 open of 2 blockers" in after and "use &lt;b&gt;SQLite&lt;/b&gt;" in after


@pytest.mark.parametrize(
    ("change", "status"),
    [({"csrf": "0" * 32}, 403), ({"id": "b-nope"}, 404), ({"project": "other"}, 404)],
)
def test_a_resolve_that_is_refused_changes_nothing(client, project: Project, change: dict, status: int) -> None:
    (hard,) = open_blockers(project)
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/blockers").text).group(1)
    form = {"csrf": csrf, "id": hard["id"], "project": "proj", **change}
    assert client.post("/blockers/resolve", data=form, follow_redirects=False).status_code == status
    assert [b["id"] for b in open_blockers(project)] == [hard["id"]]


def test_a_read_only_console_cannot_resolve(project: Project) -> None:
    (hard,) = open_blockers(project)
    why = "started from inside the claude-code session s1"
    with (
        process_env(project.env, project.root),
        TestClient(console(project, read_only=why), base_url=f"http://127.0.0.1:{PORT}") as c,
    ):
        c.cookies.set(f"stoprule_console_{PORT}", KEY)
        page = c.get("/blockers").text
        assert 'action="/blockers/resolve"' not in page and why in page
        from stoprule.console.access import csrf_of

        form = {"csrf": csrf_of(KEY), "id": hard["id"], "project": "proj"}
        assert c.post("/blockers/resolve", data=form, follow_redirects=False).status_code == 403
    assert open_blockers(project)


def test_export_is_the_clis_export(client, project: Project) -> None:
    for fmt in ("md", "json"):
        got = client.get("/blockers/export", params={"format": fmt})
        assert "attachment" in got.headers["content-disposition"]
        assert got.text == project.cli("blockers", "export", "--format", fmt).stdout


def test_a_blocked_report_is_the_four_section_panel(client) -> None:
    page = text(client.get("/reports").text)
    assert "Task Blocked - Structured Report" in page and "Task CACHE-1" in page and f"session {SESSION}" in page
    for section in ("Blocking Issues", "Attempts Made", "Suggested Alternatives", "Human Action Required"):
        assert section in page
    assert "[external_dependency] No database credentials" in page and "Location: cache.py:12" in page
    assert "Turn 7: ✗ Used an in-memory fake → The integration test needs the real driver" in page
    assert "Turn 8: ✓ Wrote the adapter layer" in page
    assert "Give the sandbox a database URL in .env.test" in page


# ---------------------------------------------------------------------- policy


def test_the_policy_page_shows_rules_in_order_verdicts_and_the_packs_used(client, project: Project) -> None:
    with process_env(project.env, project.root):
        from stoprule import load_policy

        ev = load_policy()
    page = client.get("/policy").text
    rows = re.findall(r'<tr><td class="n">\d+</td><td><code>([^<]+)</code>.*?<td class="n">(\d+)</td>', page)
    assert len(rows) == len(ev.compiled.rules) and rows[0][0] == "review.agent_requested_review"
    priorities = [int(p) for _, p in rows]
    assert priorities == sorted(priorities, reverse=True) and rows[-1][0] == "progress.ok"  # the order tried
    used = text(client.get("/policy/packs").text)
    assert f"{ev.digest.partition(':')[2][:12]} in force 5 2" in used  # 5 decisions in 2 runs
    assert "None kept yet" in text(page)  # no coverage run yet


@pytest.mark.integration
def test_the_last_coverage_run_and_the_audit(client, project: Project) -> None:
    run = project.cli("test", "--coverage", "-q")
    assert run.returncode in (0, 1), run.stderr
    page = text(client.get("/policy").text)
    assert "Coverage of the last stoprule test --coverage" in page and "MC/DC" in page and "None kept" not in page
    audit = text(client.get("/policy/audit").text)
    assert "Verdict map" in audit and "escape_hatch" in audit


@pytest.mark.integration
def test_a_changed_pack_is_diffed_against_the_one_before(project: Project, default_pack: Path) -> None:
    """The console keeps a copy of each pack it sees; decisions under a new pack name a new digest,
    and the policy page compares the two."""
    import shutil

    pack = project.root / ".stoprule" / "policies"
    shutil.copytree(default_pack, pack)
    with process_env(project.env, project.root), TestClient(console(project), base_url=f"http://127.0.0.1:{PORT}") as c:
        c.cookies.set(f"stoprule_console_{PORT}", KEY)
        c.get("/policy")  # sees (and keeps) the pack before the change
        rules = pack / "progress.yaml"
        src = rules.read_text()
        assert "    verdict: auto_continue\n    reason: available_tasks\n" in src
        rules.write_text(
            src.replace(
                "  - id: available_tasks\n    priority: 200\n",
                "  - id: available_tasks\n    priority: 200\n    description: changed\n",
                1,
            )
        )
        project.stop("codex", "cx-after", project.root / "cx-transcript.jsonl", "done")
        assert c.get("/policy").status_code == 200  # sees (and keeps) the changed pack
        page = c.get("/policy/packs").text
        pairs = re.findall(r'data-load="/policy/diff\?old=([^&]+)&amp;new=([^"]+)"', page)
        assert len(pairs) == 1  # the bundled pack (the project's copy has its digest) -> the changed copy
        diff = text(c.get("/policy/diff", params={"old": _unquote(pairs[-1][0]), "new": _unquote(pairs[-1][1])}).text)
        assert "No verdict changes" in diff and "Declarations changed" in diff


def _unquote(s: str) -> str:
    from urllib.parse import unquote

    return unquote(s)


# ---------------------------------------------------------------------- who may come in


def test_the_key_in_the_link_becomes_a_cookie_and_leaves_the_address(project: Project) -> None:
    with process_env(project.env, project.root), TestClient(console(project), base_url=f"http://127.0.0.1:{PORT}") as c:
        assert c.get("/").status_code == 401
        assert c.get("/?key=wrong").status_code == 401
        first = c.get(f"/blockers?session={SESSION}&key={KEY}", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == f"/blockers?session={SESSION}"
        cookie = first.headers["set-cookie"]
        assert f"stoprule_console_{PORT}={KEY}" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert c.get("/").status_code == 200  # the cookie now
        bearer = {"authorization": f"Bearer {KEY}"}
        assert c.get("/api/graph", params={"run": SESSION}, headers=bearer).status_code == 200


def test_only_loopback_host_names_are_answered(project: Project) -> None:
    """A page of another site whose name resolves to 127.0.0.1 (DNS rebinding) sends its own Host."""
    with process_env(project.env, project.root), TestClient(console(project), base_url="http://evil.example:8475") as c:
        c.cookies.set(f"stoprule_console_{PORT}", KEY, domain="evil.example")
        assert c.get("/").status_code == 401
        bearer = {"authorization": f"Bearer {KEY}"}
        assert c.get("/api/graph", params={"run": SESSION}, headers=bearer).status_code == 401


def test_the_version_moves_with_each_new_stop(client, project: Project) -> None:
    before = client.get("/version").json()["version"]
    assert client.get("/version").json()["version"] == before
    project.stop("codex", OTHER, project.root / "cx-transcript.jsonl", "done again")
    assert client.get("/version").json()["version"] != before


def test_the_vendored_graph_library_is_the_release_it_names() -> None:
    readme = (STATIC / "vendor" / "README.md").read_text()
    digest = hashlib.sha256((STATIC / "vendor" / "cytoscape.min.js").read_bytes()).hexdigest()
    assert digest in readme and "3.34.4" in readme
    assert "Permission is hereby granted" in (STATIC / "vendor" / "cytoscape.LICENSE").read_text()


# ---------------------------------------------------------------------- the command


def test_the_command_serves_loopback_only_and_needs_a_project(run_cli, tmp_path: Path) -> None:
    wide = run_cli("console", "--host", "0.0.0.0", "--port", "0")
    assert wide.returncode == 2 and "loopback only" in wide.stderr
    nowhere = run_cli("console", "--port", "0", cwd=tmp_path)
    assert nowhere.returncode == 2 and "no .stoprule/" in nowhere.stderr


def test_started_inside_an_agents_session_the_console_is_read_only(tmp_path: Path) -> None:
    """The harness process links its session at session start; a console started below it (from
    the agent's shell) may not resolve."""
    from stoprule.agent.blockers.procs import link_session
    from stoprule.cli.console_cmd import agent_session

    home = tmp_path / ".stoprule"
    assert agent_session(str(home)) is None
    assert link_session(str(home), "s-agent", "claude-code") > 0  # this process's ancestors: as a hook would
    why = agent_session(str(home))
    assert why is not None and "claude-code session s-agent" in why


def test_a_pack_that_does_not_compile_is_shown_not_raised(project: Project) -> None:
    pack = project.root / ".stoprule" / "policies"
    pack.mkdir()
    (pack / "rules.yaml").write_text("rules:\n  - id: broken\n    when: {nope: 1}\n")
    with process_env(project.env, project.root), TestClient(console(project), base_url=f"http://127.0.0.1:{PORT}") as c:
        c.cookies.set(f"stoprule_console_{PORT}", KEY)
        page = c.get("/policy")
        assert page.status_code == 200 and "rules.yaml:" in text(page.text)
        assert c.get("/").status_code == 200  # the runs do not need the pack
