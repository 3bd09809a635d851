"""The user docs stay readable and linked: docs/ without spec.md holds at most 22,000 words of prose,
its sentences average at most 25 words, and every link between pages lands on a page.

Prose is what is left without fenced and indented code, HTML comments and link targets. A sentence
ends at . ! or ? before a space, at a blank line, or where a list item begins; headings and table
rows count as words but not as sentences (they would pull the mean down)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: the budget of issue 39: the words a user reads, and how long a sentence runs on average
MAX_WORDS = 22_000
MAX_MEAN_SENTENCE = 25

#: a fenced block (``` or ~~~, any info string), an indented code block and an HTML comment
FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?^[ \t]*\1[ \t]*$", flags=re.DOTALL | re.MULTILINE)
INDENTED = re.compile(r"(?:(?<=\n\n)|^)(?:(?: {4}|\t)[^\n]*\n?)+", flags=re.MULTILINE)
COMMENT = re.compile(r"<!--.*?-->", flags=re.DOTALL)
#: an inline code span: its words count, its full stops and pipes end nothing
SPAN = re.compile(r"`[^`\n]*`")
#: a link's target, which is not read
LINK_TARGET = re.compile(r"\]\([^)]*\)")
#: a word: a run of letters or digits and the characters inside one (it's, tool-drift, v1.2)
WORD = re.compile(r"[\w`'’][\w`'’./:@#=<>+-]*")
#: where a block ends (a blank line, a heading, a table row, a list item) and a sentence ends
BLOCK = re.compile(r"\n\s*\n|\n(?=\s*(?:#|\||[-*+] |\d+\. ))")
END = re.compile(r"[.!?](?:\s|$)")
#: a relative Markdown link to a page, optionally with an anchor
PAGE_LINK = re.compile(r"\]\(([^)\s#:]+\.md)(?:#[^)\s]*)?\)")


def user_pages() -> list[Path]:
    return sorted(p for p in (ROOT / "docs").rglob("*.md") if p.name != "spec.md")


def prose(text: str) -> str:
    """The page without its code, comments and link targets."""
    text = INDENTED.sub("", COMMENT.sub("", FENCE.sub("", text)))
    text = SPAN.sub(lambda m: m.group().replace(".", "_").replace("?", "_").replace("|", " "), text)
    return LINK_TARGET.sub("]", text)


def units(text: str) -> list[str]:
    """The sentences of the page, its headings and its table rows, in order."""
    return [piece for block in BLOCK.split(prose(text)) for piece in END.split(block) if WORD.search(piece)]


def measure(text: str) -> tuple[int, int, int]:
    """Words of prose, and the words and number of the sentences among them."""
    words = in_sentences = count = 0
    for unit in units(text):
        n = len(WORD.findall(unit))
        words += n
        if not unit.lstrip().startswith(("#", "|")):
            in_sentences += n
            count += 1
    return words, in_sentences, count


def test_counter_skips_code_and_splits_sentences() -> None:
    """The counter skips code and comments, ends sentences at full stops, and keeps headings apart."""
    code = "One two three. Four five!\n\n```console\n$ toolreplay replay x\nlots\n```\n<!-- hidden -->\n"
    assert measure(code) == (5, 5, 2)
    assert measure("Run `toolreplay replay a.jsonl | head`. Then stop.\n") == (7, 7, 2)
    assert measure("## A heading\n\nOne two three four. Five six.\n\n| a | b |\n") == (10, 6, 2)
    assert measure("- An item:\n\n  ```text\n  not prose at all.\n  ```\n") == (2, 2, 1)


def test_user_docs_fit_their_budget() -> None:
    """docs/ without spec.md: at most 22,000 words of prose, sentences at most 25 words on average."""
    totals = [measure(page.read_text(encoding="utf-8")) for page in user_pages()]
    words = sum(t[0] for t in totals)
    mean = sum(t[1] for t in totals) / max(sum(t[2] for t in totals), 1)
    assert words <= MAX_WORDS, f"{words} words of prose in the user docs (budget {MAX_WORDS})"
    assert mean <= MAX_MEAN_SENTENCE, f"sentences average {mean:.1f} words (budget {MAX_MEAN_SENTENCE})"


def test_links_between_pages_name_pages_that_exist() -> None:
    """Every relative link to a .md page, from the README, CONTRIBUTING, CHANGELOG or docs/, finds it."""
    tops = [ROOT / name for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")]
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in [*tops, *sorted((ROOT / "docs").rglob("*.md"))]
        for target in PAGE_LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))
        if not (page.parent / target).is_file()
    ]
    assert broken == []


def test_src_names_only_pages_that_exist() -> None:
    """A docs/PAGE.md the code names in a message or docstring exists."""
    named = {
        name
        for path in sorted((ROOT / "src").rglob("*.py"))
        for name in re.findall(r"docs/([\w./-]+\.md)", path.read_text(encoding="utf-8"))
    }
    assert named, "the scan found no page named in src/"
    assert sorted(name for name in named if not (ROOT / "docs" / name).is_file()) == []
