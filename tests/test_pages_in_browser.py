"""The pages people open, in a real browser: Debian's chromium, headless, driven by Playwright.

The records report (`usdgrade records report`) and the explain page (`usdgrade explain --html`) at a
1280 px wide window: no horizontal scroll, no text below 10 px (the page's own text by its computed
size, a figure's text by its smallest size in the PNG times the scale the browser shows it at), and
every picture captioned with a view the page names. The browser is /usr/bin/chromium (or CHROMIUM);
without it or Playwright these tests fail when CI is set (CI must run them) and skip elsewhere.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from usd_repair_verifier.commands import cli
from tests.grade_in_process import grade_warm

# Not in the inner loop (a browser per worker): the full suite and CI run them.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
JOB = ROOT / "fixtures" / "harbor_jobs" / "repair-bench-fixture"
DEMO = ROOT / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair"
WIDTH = 1280
MIN_TEXT_PX = 10.0

# Every element's own text (its direct text nodes) with its computed font size and where it is.
TEXT_SIZES = """() => {
  const found = [];
  for (const el of document.body.querySelectorAll('*')) {
    const own = Array.from(el.childNodes).filter(n => n.nodeType === 3 && n.textContent.trim()).map(n => n.textContent.trim());
    if (!own.length) continue;
    const style = getComputedStyle(el);
    if (style.display === 'none' || style.visibility === 'hidden') continue;
    found.push({tag: el.tagName, text: own.join(' ').slice(0, 60), px: parseFloat(style.fontSize)});
  }
  return found;
}"""
# Each figure with the smallest text of its PNG (data-text-px) and the scale it is shown at.
FIGURE_SCALES = """() => Array.from(document.images).filter(i => i.dataset.textPx).map(i => ({
  src: i.getAttribute('src'), textPx: parseFloat(i.dataset.textPx), scale: i.clientWidth / i.naturalWidth,
  complete: i.complete && i.naturalWidth > 0}))"""


def _chromium() -> str | None:
    given = os.environ.get("CHROMIUM")
    return given if given and Path(given).is_file() else shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None)


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must test the pages in a real browser (apt-get install -y chromium)")
    pytest.skip(f"{reason}: the pages were not opened in a browser")


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed (pip install -e '.[test]')")
    executable = _chromium()
    if executable is None:
        _unavailable("no chromium (apt-get install -y chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def open_page(browser, path: Path):
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page


def assert_readable_at_1280(page) -> None:
    scroll, client = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert scroll <= client, f"the page scrolls sideways: {scroll} px of content in a {client} px window"
    small = [t for t in page.evaluate(TEXT_SIZES) if t["px"] < MIN_TEXT_PX]
    assert not small, small[:5]
    for figure in page.evaluate(FIGURE_SCALES):
        assert figure["complete"], figure
        assert figure["textPx"] * figure["scale"] >= MIN_TEXT_PX, figure


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """The bundled job's report after a partial re-grade: three episodes carry a newer grade."""
    from usd_repair_verifier.records.ingest import ingest
    from usd_repair_verifier.records.store import open_store

    folder = tmp_path_factory.mktemp("report")
    store = open_store(f"sqlite:///{folder / 'records.sqlite'}")
    with store:
        ingest(store, [JOB])
        for episode in list(store.iter_episodes())[:3]:
            earlier = store.grades(episode.episode_id)
            if earlier:
                store.upsert_grade(episode.episode_id, dict(earlier[-1]["grade_json"], verifier_version="9.9.9"),
                                   origin="regrade")
    assert cli.main(["records", "report", "--db", str(folder / "records.sqlite"), "--out", str(folder / "out")]) == 0
    return folder / "out" / "report.html"


def test_the_records_report_fits_a_1280_px_window_with_readable_text(browser, report):
    page = open_page(browser, report)
    try:
        assert_readable_at_1280(page)
        figures = page.evaluate(FIGURE_SCALES)
        assert {f["src"] for f in figures} >= {"figures/repair_by_family.png", "figures/repair_by_fault_kind.png"}
    finally:
        page.close()


def test_a_leaderboard_of_mixed_versions_says_so_where_it_ranks_them(browser, report):
    page = open_page(browser, report)
    try:
        warning = page.locator("[role=alert]")
        assert warning.count() == 1 and warning.is_visible()
        text = warning.inner_text()
        assert "Mixed versions" in text and "7/9.9.9" in text and "7/0.0.9" in text
        # in place: between the leaderboard's heading and its table
        order = page.evaluate("""() => { const h = Array.from(document.querySelectorAll('h2')).find(e => e.textContent === 'Leaderboard');
            const alert = document.querySelector('[role=alert]'); const table = document.querySelector('table');
            return [h.compareDocumentPosition(alert) & 4, alert.compareDocumentPosition(table) & 4]; }""")
        assert order == [4, 4]
        assert "graded by" in page.locator("table").first.inner_text()
    finally:
        page.close()


@pytest.fixture(scope="module")
def explain_pages(tmp_path_factory) -> dict[str, Path]:
    """The demo's page (a fault nothing visible shows) and the cabinet's (a moved handle, a shrunk collider)."""
    pages = {}
    for name, case, submission in (("demo", CASES / "ant_two_joint_faults", DEMO),
                                   ("cabinet", CASES / "cabinet_handle_and_collider",
                                    CASES / "cabinet_handle_and_collider" / "input")):
        folder = tmp_path_factory.mktemp(name)
        assert grade_warm(case, submission, folder / "grade").exit_code == 0
        assert cli.main(["explain", str(folder / "grade" / "grade.json"), "--html", "--out", str(folder / "page"),
                         "--case", str(case), "--submission", str(submission)]) == 0
        pages[name] = folder / "page" / "index.html"
    return pages


@pytest.mark.parametrize("name", ["demo", "cabinet"])
def test_the_explain_page_fits_a_1280_px_window_with_readable_text(browser, explain_pages, name):
    page = open_page(browser, explain_pages[name])
    try:
        assert_readable_at_1280(page)
        for image in page.evaluate("() => Array.from(document.images).map(i => [i.naturalWidth, i.clientWidth])"):
            assert image[0] > 0 and image[1] > 0, image          # every picture loads and shows
    finally:
        page.close()


def test_the_explain_page_captions_every_picture_with_a_named_view(browser, explain_pages):
    from usd_repair_verifier.commands.explain_pictures import VIEW_LABELS

    named = set(VIEW_LABELS.values())
    page = open_page(browser, explain_pages["cabinet"])
    try:
        captions = page.locator("figcaption").all_inner_texts()
        assert captions
        for caption in captions:
            view = caption.split(", ", 1)[1] if caption.startswith(("reference, ", "candidate, ")) else \
                caption.removeprefix("where: ")
            assert view in named, caption
        # the moved handle: a pair; the shrunk collider, which nothing visible shows: the door once
        assert any(c.startswith("candidate, ") for c in captions)
        assert any(c.startswith("where: ") for c in captions)
        assert "rear three-quarter" not in " ".join(captions)    # the handle and the door face the front
    finally:
        page.close()


def test_the_explain_page_explains_f_check_by_check(browser, explain_pages):
    page = open_page(browser, explain_pages["demo"])
    try:
        table = page.locator("table.reward-checks")
        assert table.count() == 1
        text = table.inner_text()
        grade = json.loads((explain_pages["demo"].parent.parent / "grade" / "grade.json").read_text())
        for check in grade["checks"]:
            assert check["id"] in text
        assert "passed" in text and "failed" in text and "1/2" in text
        assert f"F = 1/2 = {grade['targeted_repair_fraction']:.4f}" in text
    finally:
        page.close()
