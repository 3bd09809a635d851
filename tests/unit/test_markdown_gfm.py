"""The Markdown report as GitHub renders it: through cmark-gfm (``cmarkgfm``), asserting on the HTML."""

from __future__ import annotations

import re
import subprocess
from html import unescape
from html.parser import HTMLParser

import cmarkgfm
from cmarkgfm.cmark import Options

from toolreplay.findings import Change, Finding, Line, Report
from toolreplay.report.links import links_from_env
from toolreplay.report.markdown import render_markdown

SHA = "0123456789abcdef0123456789abcdef01234567"
GITHUB = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "octo/agents", "GITHUB_SHA": SHA}
#: the tags our own Markdown and HTML produce; anything else came from data
OURS = {
    "h3",
    "p",
    "strong",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "code",
    "a",
    "details",
    "summary",
    "pre",
    "ul",
    "li",
}
HOSTILE = [
    "@octocat please look",
    "<img src=x onerror=alert(1)>",
    "<!-- toolreplay-report -->",
    "</details><details open><summary>fake</summary>",
    "](javascript:alert(1)) [x](https://evil.example)",
    "| cell | split |",
    "line\nbreak ::error::x",
    "`code` ``more``",
    "#1 GH-2 octo/agents#3",
]


def gfm(markdown: str) -> str:
    """HTML as GitHub's renderer makes it, before its sanitiser (raw HTML kept, so a leak shows)."""
    html: str = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    return html


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_comment(self, data: str) -> None:
        self.tags.append(("!--", {"data": data}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Tags:
    parser = Tags()
    parser.feed(html)
    return parser


def drift_reports(text: str) -> list[Report]:
    baseline = "baselines/checkout.sealed.jsonl"
    findings = (
        Finding(
            kind="behavior-drift",
            index=2,
            tool=text,
            message=f"tool {text!r} returned a different response",
            path="runs/checkout-2.jsonl",
            line=3,
            related=2,
            change=Change(pointer=f"/hits/{text}", baseline=text, run="0.5"),
        ),
    )
    dirty = Finding(
        kind="non-determinism", index=5, tool=text, message=text, path="runs/a b(1).jsonl", line=6
    )
    return [
        Report(
            command="check",
            path=baseline,
            findings=findings,
            notes="drift-notes",
            header=(Line(key="runs", value=1, text=text),),
        ),
        Report(command="check", path="runs/a b(1).jsonl", findings=(dirty,), errors=(text,)),
        Report(command="check", path=f"runs/{text}.jsonl"),
        Report(command="check", path=f"runs/{text}-2.jsonl", errors=("unreadable",)),
    ]


def test_hostile_text_renders_as_text_only() -> None:
    """Whatever a tool name, message or path holds: only our tags, no comment, mention or data link."""
    for text in HOSTILE:
        html = gfm(render_markdown(drift_reports(text), environ=GITHUB))
        tags = parse(html)
        assert {tag for tag, _ in tags.tags} <= OURS, (text, html)
        assert not [t for t in tags.tags if t[0] == "!--"]
        hrefs = [attrs["href"] for tag, attrs in tags.tags if tag == "a"]
        assert hrefs and all(h and h.startswith(f"https://github.com/octo/agents/blob/{SHA}/") for h in hrefs)
        assert not re.search(r"(?<![\w\u200d])@[A-Za-z0-9]", "".join(tags.text)), text
        assert html.count("<details") == html.count("</details>") == 4


def test_each_finding_links_to_its_line_at_the_head_commit() -> None:
    """A finding's line is a link to the file at GITHUB_SHA, the path percent-encoded."""
    html = gfm(render_markdown(drift_reports("x"), environ=GITHUB))
    hrefs = [attrs["href"] for tag, attrs in parse(html).tags if tag == "a"]
    assert f"https://github.com/octo/agents/blob/{SHA}/runs/checkout-2.jsonl#L3" in hrefs
    assert f"https://github.com/octo/agents/blob/{SHA}/runs/a%20b%281%29.jsonl#L6" in hrefs
    assert ">line 3</a>" in html


def test_no_links_without_valid_github_variables() -> None:
    """Missing or malformed server, repository or commit: plain line numbers, no link at all."""
    bad = [
        {},
        {**GITHUB, "GITHUB_SHA": ""},
        {**GITHUB, "GITHUB_SHA": "HEAD"},
        {**GITHUB, "GITHUB_REPOSITORY": "octo/agents/../x"},
        {**GITHUB, "GITHUB_REPOSITORY": "octo"},
        {**GITHUB, "GITHUB_SERVER_URL": "javascript:alert(1)"},
        {**GITHUB, "GITHUB_SERVER_URL": "https://github.com/path?q=1"},
        {**GITHUB, "GITHUB_SERVER_URL": "https://user:pw@github.com"},
        {**GITHUB, "GITHUB_SERVER_URL": "https://github.com:port"},
        {**GITHUB, "GITHUB_SERVER_URL": 'https://gh.example">x'},
    ]
    for env in bad:
        assert links_from_env(env) is None, env
        html = gfm(render_markdown(drift_reports("x"), environ=env))
        assert "<a " not in html and "line 3" in html
    assert links_from_env({**GITHUB, "GITHUB_SERVER_URL": "https://ghe.example.com/"}) is not None


def test_drift_shows_both_values_and_the_accept_command() -> None:
    """What changed gives pointer, baseline and run values; the accept command is shown, the reason
    left for the reviewer."""
    html = gfm(render_markdown(drift_reports("0.92"), environ=GITHUB))
    assert "at <code>/hits/0.92</code>:\nbaseline <code>0.92</code> → run <code>0.5</code>" in html
    command = "toolreplay accept baselines/checkout.sealed.jsonl --run runs/checkout-2.jsonl --reason WHY"
    assert f'<pre lang="sh"><code>{command}\n</code></pre>' in html
    assert "saying why in place of <code>WHY</code>" in html


def test_diff_findings_say_which_file_their_index_and_line_are_in() -> None:
    """In a baseline's block, a diff finding names its run, its index and line, and the baseline index."""
    html = gfm(render_markdown(drift_reports("x")))
    assert "<td>run <code>runs/checkout-2.jsonl</code> · index 2 · line 3 · baseline index 2</td>" in html


def test_top_summary_counts_kinds_and_says_what_fails() -> None:
    """The verdict and a table of kinds with level, count and whether each fails the build; a kind
    the gate lets pass is a warning there, as in annotations and SARIF (never "error" in a passing run)."""
    md = render_markdown(drift_reports("x"), fails=lambda kind: kind == "behavior-drift")
    html = gfm(md)
    verdict = "<strong>Fails the build</strong>: 1 finding of kinds that fail it"
    verdict += " (3 advisory findings, folded below)"
    assert verdict in html
    assert '<td>behavior-drift</td>\n<td>error</td>\n<td align="right">1</td>\n<td>yes</td>' in html
    assert '<td>non-determinism</td>\n<td>warning</td>\n<td align="right">1</td>\n<td>no</td>' in html
    assert "(by level: 1 error, 3 warning)" in html
    passing = gfm(render_markdown(drift_reports("x"), fails=lambda kind: False))
    assert "<strong>Passes</strong>: 4 findings, none of a kind that fails the build" in passing


def test_trimmed_comment_still_renders_with_a_plain_more_line() -> None:
    """Cut to a small limit, the HTML is balanced and ends with how many findings are not shown."""
    findings = tuple(
        Finding(kind="redundant-call", index=i, tool="t", message="m" * 80, path="t.jsonl", line=i + 1)
        for i in range(300)
    )
    md = render_markdown([Report(command="check", path="t.jsonl", findings=findings)], limit=5_000)
    html = gfm(md)
    assert len(md) <= 5_000 and html.count("<details") == html.count("</details>")
    assert re.search(r"<p>\d+ more findings not shown here \(GitHub's size limit\)\.", html)


def test_the_note_command_runs_on_the_exact_paths_whatever_they_hold() -> None:
    """The accept command, copied from the rendered comment into bash, names the exact files (an
    ``@team`` folder, ``<``, quotes, a tab) and the raw body still holds no mention or tag."""
    baseline = "baselines/@team/<x> it's.sealed.jsonl"
    run = "runs/@team/a\tb $(id).jsonl"
    drift = Finding(kind="behavior-drift", index=1, tool="t", message="m", path=run, line=2)
    report = Report(command="check", path=baseline, findings=(drift,), notes="drift-notes")
    md = render_markdown([report])
    assert "@" + "t" not in md and "<x" not in md
    found = re.search(r'<pre lang="sh"><code>(.*)\n</code></pre>', gfm(md))
    assert found is not None
    command = unescape(found.group(1))
    assert command.startswith("toolreplay accept ")
    shown = command.replace("toolreplay", "printf '%s\\n'", 1)
    out = subprocess.run(["bash", "-c", shown], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:-1] == ["accept", baseline, "--run", run, "--reason", "WHY"]


def test_an_unreadable_file_the_gate_lets_pass_is_a_warning_everywhere() -> None:
    """A report error (a file that could not be read) the gate lets pass (the Action's fail-on: none)
    is a warning in its row, the counts and the kind table, and sits with the advisory files."""
    reports = [Report(command="check", path="b.jsonl", errors=("cannot read it",))]
    passing = render_markdown(reports, fails=lambda kind: False)
    assert "| | warning | report-error | `cannot read it` |" in passing
    assert "(by level: 1 warning)" in passing and "| error |" not in passing
    assert "with advisory findings only" in passing
    failing = render_markdown(reports)
    assert "| | error | report-error | `cannot read it` |" in failing
    assert "**Fails the build**" in failing
