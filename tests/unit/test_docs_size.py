"""The user docs stay readable: docs/ without spec.md holds at most 22,000 words of prose, and its
sentences average at most 25 words (fenced code, command output and HTML comments not counted)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: the budget of issue 39: the pages a user reads, and how long their sentences run on average
MAX_WORDS = 22_000
MAX_MEAN_SENTENCE = 25

#: a fenced block (``` or ~~~, any info string) and an HTML comment
FENCE = re.compile(r"^(```|~~~)[^\n]*\n.*?^\1[ \t]*$", flags=re.DOTALL | re.MULTILINE)
COMMENT = re.compile(r"<!--.*?-->", flags=re.DOTALL)
#: a link's target, which is read as its text only
LINK = re.compile(r"\]\([^)]*\)")
#: a word: a run of letters, digits or the characters inside one (it's, tool-drift, v1.2)
WORD = re.compile(r"[\w`'’][\w`'’./:@#=<>+-]*")
#: an indented code block (four spaces after a blank line) and an inline code span
INDENTED = re.compile(r"(?:(?<=\n\n)|^)(?:(?: {4}|\t)[^\n]*\n?)+", flags=re.MULTILINE)
SPAN = re.compile(r"`[^`\n]*`")
#: where a sentence ends: . ! or ? before a space or the end of the text
END = re.compile(r"[.!?](?:\s|$)")


def user_pages() -> list[Path]:
    return sorted(p for p in (ROOT / "docs").rglob("*.md") if p.name != "spec.md")


def prose(text: str) -> str:
    """The page without its fenced blocks, comments and link targets."""
    text = INDENTED.sub("", COMMENT.sub("", FENCE.sub("", text)))
    # a code span is words, but its full stops and pipes end nothing
    text = SPAN.sub(lambda m: m.group().replace(".", "·").replace("|", "¦").replace("?", "¿"), text)
    return LINK.sub("]", text)


def sentences(text: str) -> list[str]:
    """The sentences of the page's prose, and its headings and table rows apart (words, not sentences).

    A sentence ends at . ! or ? before a space, at a blank line, or where a list item begins."""
    found: list[str] = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:#|\||[-*+] |\d+\. ))", prose(text)):
        found += [s for s in END.split(block) if WORD.search(s)]
    return found


def is_sentence(unit: str) -> bool:
    return not unit.lstrip().startswith(("#", "|"))


def measure(pages: list[Path]) -> tuple[int, float]:
    """Words of prose (headings and tables included), and the mean words per sentence, over the pages."""
    words = in_sentences = count = 0
    for page in pages:
        for unit in sentences(page.read_text(encoding="utf-8")):
            n = len(WORD.findall(unit))
            words += n
            if is_sentence(unit):
                in_sentences += n
                count += 1
    return words, in_sentences / max(count, 1)


def measure_text(text: str) -> tuple[int, float]:
    words = [len(WORD.findall(u)) for u in sentences(text)]
    kept = [len(WORD.findall(u)) for u in sentences(text) if is_sentence(u)]
    return sum(words), sum(kept) / max(len(kept), 1)


def test_counter_skips_code_and_splits_sentences() -> None:
    """The counter skips code and comments and ends a sentence at a full stop (it can fail)."""
    text = "One two three. Four five!\n\n```console\n$ toolreplay replay x\nlots of output here\n```\n<!-- hidden -->\n"
    assert len(sentences(text)) == 2
    assert len(sentences("Run `toolreplay replay a.jsonl | head`. Then stop.")) == 2
    assert measure_text("## A heading\n\nOne two three four. Five six.\n\n| a | b |\n") == (10, 3.0)


def test_user_docs_fit_their_budget() -> None:
    """docs/ without spec.md: at most 22,000 words of prose, sentences at most 25 words on average."""
    words, mean = measure(user_pages())
    assert words <= MAX_WORDS, f"{words} words of prose in the user docs (budget {MAX_WORDS})"
    assert mean <= MAX_MEAN_SENTENCE, f"sentences average {mean:.1f} words (budget {MAX_MEAN_SENTENCE})"


#: a relative Markdown link's target: a page, optionally with an anchor
PAGE_LINK = re.compile(r"\]\(([^)\s#:]+\.md)(?:#[^)\s]*)?\)")


def test_links_between_pages_name_pages_that_exist() -> None:
    """Every relative link to a .md page, from the README, CONTRIBUTING, CHANGELOG or docs/, lands on a file."""
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in pages
        for target in PAGE_LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))
        if not (page.parent / target).is_file()
    ]
    assert broken == []


def test_src_names_only_pages_that_exist() -> None:
    """A docs/PAGE.md the code names in a message or docstring exists."""
    named = {
        match
        for path in sorted((ROOT / "src").rglob("*.py"))
        for match in re.findall(r"docs/([\w./-]+\.md)", path.read_text(encoding="utf-8"))
    }
    assert named, "the scan found no page named in src/"
    assert sorted(name for name in named if not (ROOT / "docs" / name).is_file()) == []
