"""The console in a real headless Chromium (Debian's ``chromium``, driven by Playwright; never a
downloaded browser) against ``stoprule console`` started as its own process (the process
boundary is the point: a server a browser talks to) over a ledger recorded by real hook runs
(recorded.py). Marked ``browser``: ``python -m pytest -m browser -n 0``.

Each test writes screenshots of what it saw to ``$STOPRULE_SCREENSHOTS`` (default: a folder
under pytest's temporary directory, printed at the end); docs/console/ holds a set of them.
Without a Chromium the tests are skipped, unless ``STOPRULE_REQUIRE_BROWSER`` is set (CI).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from consolehelp import project_env
from recorded import OTHER, QUESTION, SESSION, Project, record

pytestmark = pytest.mark.browser

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
PHONE = {"width": 390, "height": 844}
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def chromium() -> str | None:
    for candidate in (os.environ.get("STOPRULE_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = Path(os.environ.get("STOPRULE_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    yield folder
    print(f"\nconsole screenshots: {folder}")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, pack_cache: Path) -> Project:
    tmp = tmp_path_factory.mktemp("browser")
    return record(tmp / "proj", project_env(tmp, pack_cache))


@pytest.fixture(scope="module")
def console_url(project: Project) -> Iterator[str]:
    """``stoprule console --port 0`` in the project; its link (with the key) once it answers."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "stoprule", "console", "--port", "0"],
        cwd=project.root,
        env=project.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?key=[\w-]+", line), (line, proc.stderr and proc.stderr.read())
        yield line
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    exe = chromium()
    if exe is None:
        if os.environ.get("STOPRULE_REQUIRE_BROWSER"):
            pytest.fail("no Chromium: apt-get install -y chromium (or set STOPRULE_CHROMIUM)")
        pytest.skip("no Chromium (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")),
            executable_path=exe,
            args=CHROMIUM_FLAGS,
            headless=True,
            viewport={"width": 1280, "height": 860},
        )  # a fresh user-data-dir
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser, console_url: str) -> Iterator[object]:
    """A tab signed in with the console's link; fails the test on any script error or CSP violation."""
    tab = browser.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    tab.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    tab.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    tab.goto(console_url)
    tab.wait_for_selector("body[data-ready='1']")
    yield tab
    tab.close()
    assert problems == []


def base(console_url: str) -> str:
    return console_url.split("/?key=")[0]


def ready(tab, url: str) -> None:  # noqa: ANN001
    tab.goto(url)
    tab.wait_for_selector("body[data-ready='1']")


def test_the_run_list(page, console_url: str, shots: Path) -> None:  # noqa: ANN001
    assert "key=" not in page.url  # the key went into a cookie
    rows = page.locator("table.runs tbody tr")
    assert rows.count() == 2
    cc = page.locator(f'tr[data-key="{SESSION}"]').inner_text()
    assert "claude-code" in cc and "user_review" in cc and "verified" in cc
    assert "codex" in page.locator(f'tr[data-key="{OTHER}"]').inner_text()
    page.screenshot(path=str(shots / "runs.png"), full_page=True)
    page.select_option("select[name=harness]", "codex")
    page.click("form.filters button")
    page.wait_for_selector("body[data-ready='1']")
    assert page.locator("table.runs tbody tr").count() == 1


def test_the_dag_with_a_blocked_attempt_its_retry_and_a_decisions_provenance(
    page, console_url: str, shots: Path
) -> None:  # noqa: ANN001
    page.click(f'a:text-is("{SESSION}")')
    page.wait_for_selector("body[data-graph-ready='1']")
    assert page.get_attribute("#graph", "data-nodes") == "4"
    graph = page.evaluate("""() => ({
        nodes: consoleGraph.nodes().map(n => [n.id(), n.classes().join(' ')]),
        edges: consoleGraph.edges().map(e => [e.source().id(), e.target().id(), e.classes().join(' ')]) })""")
    classes = dict(graph["nodes"])
    assert "blocked" in classes["n2"] and "terminal" in classes["n4"] and "step" in classes["n3"]
    assert ["n2", "n3", "retry"] in graph["edges"]
    page.screenshot(path=str(shots / "run.png"), full_page=True)
    # a click on the retry node in the drawing opens its decision
    box = page.locator("#graph").bounding_box()
    pos = page.evaluate("() => consoleGraph.getElementById('n3').renderedPosition()")
    page.mouse.click(box["x"] + pos["x"], box["y"] + pos["y"])
    panel = page.locator("#decision section.decision-body[data-node='n3']")
    panel.wait_for()
    text = panel.inner_text()
    assert "as its retry" in text and "attempt 2" in text and "auto_continue" in text
    rows = panel.locator("table.factrows tbody tr").all()
    facts = {r.locator("td").nth(0).inner_text(): r.inner_text() for r in rows}
    assert "state" in facts["turn"] and "declared" in facts["turn"]
    assert "hook" in facts["taskBoundaryStop"] and "observed" in facts["taskBoundaryStop"]
    assert "transcript" in facts["availableTasks"] and "observed" in facts["availableTasks"]
    assert page.url.endswith("#n3")
    panel.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "decision.png"), full_page=True)
    ready(page, page.url.split("#")[0] + "#n2")  # the address opens the same panel
    page.locator("#decision section.decision-body[data-node='n2']").wait_for()
    assert "retried by n3" in page.locator("#decision").inner_text()


def test_resolving_a_blocker_and_the_cli_sees_it(page, console_url: str, project: Project, shots: Path) -> None:  # noqa: ANN001
    ready(page, base(console_url) + "/blockers")
    card = page.locator("li.card.hard.open")
    assert card.count() == 1
    page.screenshot(path=str(shots / "blockers.png"), full_page=True)
    card.locator("input[name=note]").fill("Use SQLite for the cache")
    card.locator("button").click()
    page.wait_for_selector(".flash")
    assert "Resolved b-" in page.locator(".flash").inner_text()
    listed = project.cli("blockers", "list", "--all", "--format", "json")
    data = json.loads(listed.stdout)
    assert data["open"] == [] and [b["resolution"] for b in data["resolved"] if b["kind"] == "hard"] == [
        "Use SQLite for the cache"
    ]
    ready(page, base(console_url) + "/blockers?show=all")
    page.screenshot(path=str(shots / "blockers-resolved.png"), full_page=True)


def test_html_in_a_blocker_and_a_report_is_shown_as_text(page, console_url: str, shots: Path) -> None:  # noqa: ANN001
    for path in ("/blockers?show=all", "/reports"):
        ready(page, base(console_url) + path)
        assert page.locator("img[src=x]").count() == 0
        assert page.evaluate("() => document.title") != "pwned"
        assert "<script>document.title" in page.locator("main").inner_text()  # the agent's text, as text
    assert page.locator("article.report h2").inner_text() == "Task Blocked - Structured Report"
    page.screenshot(path=str(shots / "reports.png"), full_page=True)
    ready(page, base(console_url) + "/blockers?show=all")
    assert page.locator(f'text="{QUESTION}"').count() == 1


def test_new_stops_appear_without_a_reload(page, console_url: str, project: Project, shots: Path) -> None:  # noqa: ANN001
    page.wait_for_selector("#live.on")
    marker = page.evaluate("() => (window.__same = 1)")  # a reload would lose it
    t = project.root / "cx-transcript.jsonl"
    project.stop("codex", "cx-live-3", t, "Another stop.")
    row = page.locator('tr[data-key="cx-live-3"]')
    row.wait_for(timeout=15_000)
    assert "new" in (row.get_attribute("class") or "")
    assert page.evaluate("() => window.__same") == marker
    page.screenshot(path=str(shots / "runs-live.png"), full_page=True)


def test_the_policy_page(page, console_url: str, shots: Path) -> None:  # noqa: ANN001
    ready(page, base(console_url) + "/policy")
    page.wait_for_selector("#audit table.vmap", timeout=30_000)
    page.wait_for_selector("#packs table", timeout=30_000)
    assert page.locator("table.rules tbody tr").count() > 10
    assert "in force" in page.locator("#packs").inner_text()
    page.screenshot(path=str(shots / "policy.png"))  # the top of the page: a full one is very tall


@pytest.mark.parametrize("path", ["/", f"/run?run={SESSION}", "/blockers?show=all", "/reports", "/policy"])
def test_a_phone_sized_screen(browser, console_url: str, shots: Path, path: str) -> None:  # noqa: ANN001
    tab = browser.new_page()
    tab.set_viewport_size(PHONE)
    try:
        tab.goto(console_url)
        ready(tab, base(console_url) + path)
        if path.startswith("/run"):
            tab.wait_for_selector("body[data-graph-ready='1']")
        width = tab.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], f"{path}: the page is wider than the screen ({width[0]} > {width[1]})"
        names = {"/": "runs", "/blockers?show=all": "blockers", "/reports": "reports", "/policy": "policy"}
        name = names.get(path, "run")
        tab.screenshot(path=str(shots / f"phone-{name}.png"), full_page=False)
    finally:
        tab.close()


def test_a_long_run_opens_on_its_tip_draws_whole_on_fit_and_grows_live(
    page, console_url: str, project: Project, shots: Path
) -> None:  # noqa: ANN001
    """A run longer than a screen is drawn where the view is (the rest as the view moves), whole
    for "fit all", and a new decision joins the open graph without a reload."""
    facts = [json.loads((EXAMPLES / name).read_text()) for name in ("task-boundary-stop.json", "soft-blocker.json")]
    batch = "".join(json.dumps(facts[i % 2]) + "\n" for i in range(150))
    assert project.cli("eval", "--run", "long-run", "-", input=batch).returncode in (0, 1)
    ready(page, base(console_url) + "/run?run=long-run")
    page.wait_for_selector("body[data-graph-ready='1']")
    assert page.get_attribute("#graph", "data-nodes") == "150"
    drawn = page.evaluate("() => consoleGraph.nodes().map(n => n.id())")
    assert "n150" in drawn and "n1" not in drawn and len(drawn) < 150  # the tip's neighbourhood
    assert page.evaluate("() => consoleGraph.getElementById('n150').hasClass('tip')")
    page.click("#fit")
    assert page.evaluate("() => consoleGraph.nodes().length") == 150 == int(page.get_attribute("#graph", "data-drawn"))
    assert page.evaluate("() => consoleGraph.edges().length") == 149
    page.screenshot(path=str(shots / "run-long.png"))
    page.wait_for_selector("#live.on")
    assert project.cli("eval", "--run", "long-run", "-", input=json.dumps(facts[1]) + "\n").returncode in (0, 1)
    page.wait_for_function("() => consoleGraph.nodes().length === 151", timeout=15_000)
    assert page.evaluate("() => consoleGraph.getElementById('n151').hasClass('tip')")
    assert not page.evaluate("() => consoleGraph.getElementById('n150').hasClass('tip')")
    assert page.evaluate("() => consoleGraph.getElementById('n150>n151').length") == 1
