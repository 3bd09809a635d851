"""The PR comment in a browser: rendered by cmarkgfm (GitHub's renderer) and laid out by headless
Chromium at 1000 px with the rules of GitHub's stylesheet that decide widths, it never scrolls
sideways, and the note's reason and the changed values are in its text.

Chromium comes from the project's CI set-up (.ci/run installs Debian's ``chromium``); on a
developer machine without it these tests skip, under CI (``CI`` set) they fail.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from tests.acceptance.test_comment_accept import BASELINE, OTHER, RUN, pull_request, run_text
from tests.gitrepo import Repo, note, sealed
from toolreplay.check import run_check_with_status
from toolreplay.config import load_config
from toolreplay.github.comment import comment_body
from toolreplay.report.markdown import render_markdown

WIDTH = 1000
#: the rules of GitHub's Markdown stylesheet that decide how wide a comment is
GITHUB_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; font-size: 14px;
       line-height: 1.5; word-wrap: break-word; margin: 8px; }
table { display: block; width: max-content; max-width: 100%; overflow: auto; border-spacing: 0;
        border-collapse: collapse; }
td, th { padding: 6px 13px; border: 1px solid #d0d7de; }
pre { overflow: auto; padding: 16px; background: #f6f8fa; }
code { white-space: break-spaces; font-family: monospace; font-size: 85%; }
blockquote { margin: 0; padding: 0 1em; border-left: .25em solid #d0d7de; }
"""
#: what the page measures once laid out: its scroll width, its width, and tables that scroll
MEASURE = """
<script>
const page = document.scrollingElement;
const wide = [...document.querySelectorAll('table')].filter(t => t.scrollWidth > t.clientWidth + 1);
document.body.setAttribute('data-measure', JSON.stringify({
  scrollWidth: page.scrollWidth, innerWidth: window.innerWidth, wideTables: wide.length,
  text: document.body.innerText}));
</script>
"""
LONG = "0123456789abcdef" * 12


def chromium() -> str:
    """Debian's chromium, or skip on a developer machine (fail under CI, which installs it)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed, and CI (.ci/run) installs it")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def measure(markdown: str, folder: Path) -> dict[str, object]:
    """Lay the comment out at 1000 px in headless Chromium; a screenshot is left beside it."""
    body = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    page = folder / "comment.html"
    page.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><style>{GITHUB_CSS}</style></head>"
        f"<body>{body}{MEASURE}</body></html>",
        encoding="utf-8",
    )
    browser = chromium()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--window-size={WIDTH},900"]
    subprocess.run(
        [browser, *flags, f"--screenshot={folder / 'comment.png'}", page.as_uri()],
        capture_output=True,
        check=False,
        timeout=120,
    )
    done = subprocess.run(
        [browser, *flags, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found = re.search(r'data-measure="([^"]*)"', done.stdout)
    assert found is not None, done.stdout[-2000:]
    result: dict[str, object] = json.loads(html.unescape(found.group(1)))
    return result


def scene(tmp_path: Path) -> tuple[Repo, str]:
    """A pull request with every situation at once: an accepted re-recorded baseline (with a
    reason), an unaccepted one (its run drifts, with a long value), a guard change, and the same
    drift from several runs."""
    repo, base = pull_request(tmp_path / "ws", status="f" * 120)
    repo.write(
        "drift-notes/search.md",
        note(
            OTHER, sealed(3)[1], sealed(4)[1], "The search index was rebuilt; answers now hold one more hit."
        ),
    )
    long_run = run_text(5, LONG)
    repo.write(RUN, long_run)
    for n in range(2, 7):
        repo.write(f"runs/gitbot-{n}.jsonl", long_run)
    repo.write(
        "toolreplay.toml",
        (repo.path / "toolreplay.toml").read_text() + 'fail_on = ["behavior-drift", "agent-drift"]\n',
    )
    repo.commit_all("more")
    return repo, base


def comment_of(repo: Repo, base: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(repo.path)
    config = load_config(None)
    reports, _ = run_check_with_status(config, base=base)
    return comment_body(reports, fails=config.fails, base=base)


@pytest.mark.slow
def test_the_comment_fits_1000_px_and_carries_reason_and_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every situation at once: no sideways scroll of the page or of a table; the note's reason,
    the changed values and the guard change are in the text."""
    repo, base = scene(tmp_path)
    markdown = comment_of(repo, base, monkeypatch)
    seen = measure(markdown, tmp_path)
    assert seen["scrollWidth"] == seen["innerWidth"] == WIDTH, seen["scrollWidth"]
    assert seen["wideTables"] == 0
    text = str(seen["text"])
    assert "The search index was rebuilt; answers now hold one more hit." in text
    assert "baseline 3 → run 5" in text
    assert LONG[:50] in text
    assert "fail_on" in text
    assert re.search(
        r"The drift guard's settings change in toolreplay.toml \(base version [0-9a-f]{12} → head", text
    )
    # the same drift from six runs is one row naming them
    assert markdown.count("behavior-drift | `") == 1, markdown


@pytest.mark.slow
def test_the_job_summary_has_no_caps_and_fits_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The job summary (uncapped) shows the whole reason and still fits 1000 px."""
    repo, base = scene(tmp_path)
    reason = "Long reason. " * 60
    repo.write("drift-notes/search.md", note(OTHER, sealed(3)[1], sealed(4)[1], reason))
    repo.commit_all("longer reason")
    monkeypatch.chdir(repo.path)
    config = load_config(None)
    reports, _ = run_check_with_status(config, base=base)
    summary = render_markdown(reports, fails=config.fails, base=base, caps=False)
    capped = render_markdown(reports, fails=config.fails, base=base)
    assert reason.strip() in summary.replace("\n", " ") or reason.strip()[:500] in summary
    assert "…" in capped and len(capped) < len(summary)
    seen = measure(summary, tmp_path)
    assert seen["scrollWidth"] == WIDTH and seen["wideTables"] == 0


@pytest.mark.slow
def test_many_findings_over_several_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Twenty runs drifting alike, and a baseline whose run drifts in many calls: still 1000 px."""
    repo, base = pull_request(tmp_path / "ws")
    calls = "".join(run_text(n).splitlines(keepends=True)[1] for n in range(1))
    assert calls
    for n in range(2, 22):
        repo.write(f"runs/gitbot-{n}.jsonl", run_text(n))
    repo.commit_all("runs")
    markdown = comment_of(repo, base, monkeypatch)
    seen = measure(markdown, tmp_path)
    assert seen["scrollWidth"] == WIDTH and seen["wideTables"] == 0
    assert BASELINE in str(seen["text"])
