"""The drift-note guard against real temporary git repositories (no pre-commit in between)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitrepo import Repo, note, sealed
from toolreplay.driftnotes.guard import GuardResult, check_commit, check_range, check_staged, note_command
from toolreplay.driftnotes.settings import GuardSettings, recorded_config, settings_change
from toolreplay.errors import InputError
from toolreplay.git import Git, GitError, parse_raw_diff
from toolreplay.transcript import GENESIS

BASE = "baselines/checkout.sealed.jsonl"
V3, V4, V5 = (sealed(n)[1] for n in (3, 4, 5))


@pytest.fixture(autouse=True)
def _git(git_isolated: None) -> None:
    """The guard runs git with the inherited environment: make that one a clean test identity."""


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = Repo.create(tmp_path / "repo")
    repo.write_baseline(BASE, 3)
    repo.write("README.md", "hello\n")
    repo.commit_all("baseline v3")
    return repo


def staged(repo: Repo, **kwargs: object) -> GuardResult:
    return check_staged(Git(cwd=str(repo.path)), **kwargs)  # type: ignore[arg-type]


def text(result: GuardResult) -> str:
    return "\n".join(line for p in result.problems for line in (p.subject, *p.lines))


def test_unrelated_change_passes(repo: Repo) -> None:
    """A commit that touches no baseline is let through and reports no change."""
    repo.write("README.md", "changed\n")
    repo.git("add", "README.md")
    result = staged(repo)
    assert result.problems == () and result.changes == ()


def test_modified_baseline_without_note_is_refused(repo: Repo) -> None:
    """Modifying a baseline without a note is refused, naming the baseline, both heads and the command."""
    repo.write_baseline(BASE, 4)
    repo.git("add", BASE)
    result = staged(repo)
    assert [p.baseline for p in result.problems] == [BASE]
    lines = result.problems[0].lines
    assert result.problems[0].subject == f"baseline '{BASE}' (modified)"
    assert lines[0] == f"from: {V3}"
    assert lines[1] == f"to:   {V4}"
    assert "no drift note staged under drift-notes/ names this baseline" in lines
    assert f"write the note: toolreplay note {BASE} -o drift-notes/checkout.md" in lines


def test_modified_baseline_with_matching_note_passes(repo: Repo) -> None:
    """A staged note whose baseline, from and to match the change lets the commit through."""
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    repo.git("add", "-A")
    result = staged(repo)
    assert result.problems == ()
    assert [(c.baseline, c.from_head, c.to_head) for c in result.changes] == [(BASE, V3, V4)]


def test_note_for_an_older_head_is_stale(repo: Repo) -> None:
    """A note whose 'to' is a head the baseline had before the staged one gets the stale message."""
    repo.write_baseline(BASE, 5)
    repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    repo.git("add", "-A")
    assert f"note 'drift-notes/v4.md' is stale: its to {V4} is an older head" in text(staged(repo))


def test_note_reused_from_the_previous_change_is_stale(repo: Repo) -> None:
    """Reusing the note of the last change (its 'to' is the committed head) is refused as stale."""
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    repo.commit_all("v4 with its note")
    repo.write_baseline(BASE, 5)
    repo.write("drift-notes/v4.md", note(BASE, V3, V4, prose="Edited prose."))
    repo.git("add", "-A")
    out = text(staged(repo))
    assert f"has from {V3}, but the committed head (HEAD) is {V4}" in out
    assert f"is stale: its to {V4} is an older head of this baseline; the baseline changed" in out


def test_note_with_a_wrong_head_is_refused(repo: Repo) -> None:
    """A 'to' that is no head this baseline ever had is a plain mismatch naming the staged head."""
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/v4.md", note(BASE, V3, "ab" * 32))
    repo.git("add", "-A")
    assert f"has to {'ab' * 32}, but the staged head is {V4}" in text(staged(repo))


def test_new_baseline_needs_a_genesis_note(repo: Repo) -> None:
    """Adding a baseline is a change from the genesis value."""
    repo.write_baseline("baselines/new.sealed.jsonl", 2)
    repo.git("add", "-A")
    result = staged(repo)
    assert result.problems[0].subject == "baseline 'baselines/new.sealed.jsonl' (added)"
    assert result.problems[0].lines[0].startswith(f"from: {GENESIS}  (genesis")
    repo.write("drift-notes/new.md", note("baselines/new.sealed.jsonl", GENESIS, sealed(2)[1]))
    repo.git("add", "-A")
    assert staged(repo).problems == ()


def test_deleted_baseline_needs_a_note_without_to(repo: Repo) -> None:
    """Deleting a baseline is refused unless a note with from and no 'to' is staged."""
    repo.git("rm", "-q", BASE)
    result = staged(repo)
    assert result.problems[0].subject == f"baseline '{BASE}' (deleted)"
    assert result.problems[0].lines[1] == "to:   none (deleted)"
    repo.write("drift-notes/gone.md", note(BASE, V3, V4))
    repo.git("add", "-A")
    assert "but this commit deletes the baseline: remove 'to'" in text(staged(repo))
    repo.write("drift-notes/gone.md", note(BASE, V3, None))
    repo.git("add", "-A")
    assert staged(repo).problems == ()


def test_rename_out_of_the_pattern_is_a_deletion(repo: Repo) -> None:
    """Renaming a baseline to a name the pattern does not match needs a deletion note."""
    repo.git("mv", BASE, "baselines/checkout.jsonl.bak")
    result = staged(repo)
    assert result.problems[0].subject == f"baseline '{BASE}' (renamed to 'baselines/checkout.jsonl.bak')"
    repo.write("drift-notes/gone.md", note(BASE, V3, None))
    repo.git("add", "-A")
    assert staged(repo).problems == ()


def test_rename_inside_the_pattern_needs_both_notes(repo: Repo) -> None:
    """A rename is a deletion of the old path plus an addition of the new one."""
    repo.git("mv", BASE, "baselines/cart.sealed.jsonl")
    subjects = [p.subject for p in staged(repo).problems]
    assert subjects == [
        f"baseline '{BASE}' (renamed to 'baselines/cart.sealed.jsonl')",
        f"baseline 'baselines/cart.sealed.jsonl' (renamed from '{BASE}')",
    ]
    repo.write("drift-notes/old.md", note(BASE, V3, None))
    repo.write("drift-notes/new.md", note("baselines/cart.sealed.jsonl", GENESIS, V3))
    repo.git("add", "-A")
    assert staged(repo).problems == ()


def test_reads_the_index_not_the_working_tree(repo: Repo) -> None:
    """What counts is the staged blob: a further unstaged edit neither helps nor hurts."""
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    repo.git("add", "-A")
    repo.write_baseline(BASE, 5)  # unstaged
    assert staged(repo).problems == ()
    repo.write("drift-notes/v4.md", note(BASE, V3, V5))
    repo.git("add", "drift-notes/v4.md")  # a note for the working-tree version, not the staged one
    assert f"has to {V5}, but the staged head is {V4}" in text(staged(repo))


def test_honours_a_temporary_index(repo: Repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With GIT_INDEX_FILE set (git commit PATH), the guard judges that index, not .git/index."""
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    repo.git("add", "-A")
    assert staged(repo).problems == ()  # the real index holds the note
    index = str(tmp_path / "only-index")
    repo.git("read-tree", "HEAD", env={"GIT_INDEX_FILE": index})
    repo.git("add", BASE, env={"GIT_INDEX_FILE": index})
    monkeypatch.setenv("GIT_INDEX_FILE", index)
    result = staged(repo)
    assert "no drift note staged under drift-notes/ names this baseline" in result.problems[0].lines


def test_path_with_spaces(repo: Repo) -> None:
    """A baseline whose path has spaces is found, and the printed command quotes it for the shell."""
    path = "baselines/my run.sealed.jsonl"
    repo.write_baseline(path, 2)
    repo.git("add", "-A")
    assert (
        "write the note: toolreplay note 'baselines/my run.sealed.jsonl' -o 'drift-notes/my run.md'"
        in staged(repo).problems[0].lines
    )
    repo.write("drift-notes/my run.md", note(path, GENESIS, sealed(2)[1]))
    repo.git("add", "-A")
    assert staged(repo).problems == ()


def test_broken_staged_chain_is_refused_even_with_a_note(repo: Repo) -> None:
    """No note can accept a staged baseline whose chain is broken."""
    text_v4, _ = sealed(4)
    repo.write(BASE, text_v4.replace('"q1"', '"qX"'))
    repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    repo.git("add", "-A")
    lines = staged(repo).problems[0].lines
    assert lines[1] == "to:   none: the staged file is not an intact sealed chain"
    assert "chain broken at index 1: digest does not match the link's content" in lines[2]


def test_committed_broken_baseline_is_judged_by_its_intact_prefix(repo: Repo) -> None:
    """A baseline committed broken can be repaired: 'from' is the head of its intact prefix."""
    text_v4, _ = sealed(4)
    repo.write(BASE, text_v4.replace('"q3"', '"qX"'))
    repo.commit_all("tampered (hooks skipped)")
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/repair.md", note(BASE, V3, V4))
    repo.git("add", "-A")
    assert staged(repo).problems == ()


def test_invalid_staged_note_is_refused(repo: Repo) -> None:
    """A staged note without an explanation is refused by name, whatever it matches."""
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/v4.md", note(BASE, V3, V4, prose="<!-- why? -->"))
    repo.git("add", "-A")
    problems = staged(repo).problems
    assert problems[0].subject == "drift note 'drift-notes/v4.md' is not valid"
    assert problems[0].lines[0].startswith("drift-notes/v4.md:8: the note has no explanation")


def test_stray_note_is_pointed_out(repo: Repo) -> None:
    """A staged note naming another path (a typo) is shown next to the baseline it failed to cover."""
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/v4.md", note("./" + BASE, V3, V4))
    repo.git("add", "-A")
    assert f"(staged note 'drift-notes/v4.md' names './{BASE}', which this commit does not change)" in text(
        staged(repo)
    )


def test_line_endings_alone_are_no_drift(repo: Repo) -> None:
    """Rewriting a baseline with CRLF endings keeps its chain and head: nothing to accept."""
    repo.write(BASE, sealed(3)[0].replace("\n", "\r\n"))
    repo.git("add", "-A")
    result = staged(repo)
    assert result.problems == () and result.changes == ()


def test_first_commit_of_a_repository(tmp_path: Path) -> None:
    """Before the first commit there is no HEAD: every baseline is new."""
    repo = Repo.create(tmp_path / "fresh")
    head = repo.write_baseline(BASE, 1)
    repo.git("add", "-A")
    assert staged(repo).problems[0].subject == f"baseline '{BASE}' (added)"
    repo.write("drift-notes/first.md", note(BASE, GENESIS, head))
    repo.git("add", "-A")
    assert staged(repo).problems == ()


def test_patterns_and_notes_folder_are_configurable(repo: Repo) -> None:
    """Only paths matching the given patterns are baselines; notes are read from the given folder."""
    repo.write_baseline(BASE, 4)
    repo.write("docs/accepted/v4.md", note(BASE, V3, V4))
    repo.git("add", "-A")
    assert staged(repo, patterns=("other/*.sealed.jsonl",)).changes == ()
    assert staged(repo, notes_dir="docs/accepted/").problems == ()
    assert staged(repo).problems != ()


def test_notes_folder_cannot_be_the_root(repo: Repo) -> None:
    """A notes folder of '.' would make every Markdown file a note: refused as a usage error."""
    with pytest.raises(InputError, match="not its root"):
        staged(repo, notes_dir="./")


def test_range_between_commits(repo: Repo) -> None:
    """check_range judges base..head as one change, as a CI job on a pull request would."""
    base = repo.head()
    repo.write_baseline(BASE, 4)
    repo.commit_all("v4 without a note (hooks skipped)")
    git = Git(cwd=str(repo.path))
    assert [p.baseline for p in check_range(git, base, "HEAD").problems] == [BASE]
    repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    repo.commit_all("the note, one commit later")
    assert check_range(git, base, "HEAD").problems == ()


def test_range_accepts_one_note_per_commit(repo: Repo) -> None:
    """Over a range, notes that chain from the base head to the head accept the change; a gap does not."""
    base = repo.head()
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    repo.commit_all("v4")
    repo.write_baseline(BASE, 5)
    repo.write("drift-notes/v5.md", note(BASE, V4, V5))
    repo.commit_all("v5")
    git = Git(cwd=str(repo.path))
    assert check_range(git, base, "HEAD").problems == ()
    assert staged(repo).problems == ()  # nothing staged
    repo.git("rm", "-q", "drift-notes/v4.md")
    repo.commit_all("lose the first note")
    assert [p.baseline for p in check_range(git, base, "HEAD").problems] == [BASE]


def test_range_starts_at_the_merge_base(repo: Repo) -> None:
    """A branch is judged from where it left its base, not against later commits on the base."""
    repo.git("checkout", "-q", "-b", "feature")
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    repo.commit_all("feature: v4 with its note")
    repo.git("checkout", "-q", "main")
    repo.write("README.md", "main moved on\n")
    repo.commit_all("main moves on")
    git = Git(cwd=str(repo.path))
    result = check_range(git, "main", "feature")
    assert result.problems == ()
    assert [c.baseline for c in result.changes] == [BASE]


def test_merge_brings_the_other_branch_notes(repo: Repo) -> None:
    """A merge is judged against the branch merged into; the notes arriving with it count."""
    repo.git("checkout", "-q", "-b", "feature")
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    repo.commit_all("feature: v4 with its note")
    repo.git("checkout", "-q", "main")
    repo.write("README.md", "main moved on\n")
    repo.commit_all("main moves on")
    repo.git("merge", "-q", "--no-ff", "--no-commit", "feature")
    result = staged(repo)
    assert [c.baseline for c in result.changes] == [BASE]
    assert result.problems == ()


def test_user_diff_settings_do_not_change_the_verdict(repo: Repo) -> None:
    """diff.relative, rename and colour settings, and running from a subfolder, leave paths root-relative."""
    for key, value in (("diff.relative", "true"), ("color.ui", "always"), ("diff.renames", "copies")):
        repo.git("config", key, value)
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    repo.git("add", "-A")
    (repo.path / "docs").mkdir()
    result = check_staged(Git(cwd=str(repo.path / "docs")))
    assert result.problems == ()
    assert [c.baseline for c in result.changes] == [BASE]


def test_not_a_repository(tmp_path: Path) -> None:
    """Outside a git work tree the guard stops with a one-line error."""
    with pytest.raises(GitError, match="not inside a git work tree"):
        check_staged(Git(cwd=str(tmp_path)))


def test_parse_raw_diff_statuses() -> None:
    """Renames carry two paths, odd names survive, and all-zero object ids mean 'no object'."""
    z = "0" * 40
    a, b = "a" * 40, "b" * 40
    out = (
        f":100644 100644 {a} {b} M\0x y.sealed.jsonl\0"
        f":100644 100644 {a} {a} R100\0old\0new\nline\0"
        f":100644 000000 {a} {z} D\0gone\0"
        f":000000 100644 {z} {b} A\0caf\xc3\xa9\0"
    ).encode("latin-1")
    entries = parse_raw_diff(out)
    assert [(e.status, e.old_path, e.new_path) for e in entries] == [
        ("M", "x y.sealed.jsonl", "x y.sealed.jsonl"),
        ("R", "old", "new\nline"),
        ("D", "gone", None),
        ("A", None, "café"),
    ]
    assert entries[2].new_oid is None and entries[3].old_oid is None


def test_note_command_quotes_for_the_shell() -> None:
    """The printed command is one shell word per argument, and control characters stay escaped."""
    assert note_command("b/it's here.sealed.jsonl") == "toolreplay note 'b/it'\"'\"'s here.sealed.jsonl'"
    assert note_command("b/x\n.sealed.jsonl") == "toolreplay note 'b/x\\n.sealed.jsonl'"


def test_note_command_proposes_a_free_name() -> None:
    """The proposed note file is one that does not exist yet: NAME.md, then NAME-2.md, NAME-3.md."""
    base = "b/checkout.sealed.jsonl"
    assert note_command(base, "notes") == "toolreplay note b/checkout.sealed.jsonl -o notes/checkout.md"
    taken = {"notes/checkout.md", "notes/checkout-2.md"}
    assert note_command(base, "notes", taken).endswith(" -o notes/checkout-3.md")


def test_commit_against_its_parent(repo: Repo) -> None:
    """check_commit judges one commit against its first parent (a root commit against nothing)."""
    git = Git(cwd=str(repo.path))
    root = check_commit(git, "HEAD")
    assert [(c.baseline, c.action) for c in root.changes] == [(BASE, "added")]
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    repo.commit_all("v4 with its note")
    assert check_commit(git, "HEAD").problems == ()
    repo.git("rm", "-q", "drift-notes/v4.md")
    repo.git("commit", "-q", "--amend", "--no-verify", "--no-edit")  # what the amend bypass made
    assert [p.baseline for p in check_commit(git, "HEAD").problems] == [BASE]


def test_config_is_read_from_the_index_or_a_commit(repo: Repo) -> None:
    """recorded_config reads the staged or committed version at the root, never the working tree's."""
    git = Git(cwd=str(repo.path))
    repo.write("toolreplay.toml", 'baselines = ["untracked/*"]\n')
    assert recorded_config(git, None) is None
    repo.write("pyproject.toml", "[project]\nname = 'x'\n")
    repo.git("add", "pyproject.toml")
    assert recorded_config(git, None) is None  # a pyproject.toml without [tool.toolreplay]
    repo.git("add", "toolreplay.toml")
    repo.write("toolreplay.toml", 'baselines = ["working-tree/*"]\n')
    staged_config = recorded_config(git, None)
    assert staged_config is not None
    assert (staged_config.baselines, staged_config.source) == (("untracked/*",), "toolreplay.toml (staged)")
    repo.commit_all("config")
    committed = recorded_config(git, "HEAD")
    assert committed is not None and committed.baselines == ("working-tree/*",)
    assert recorded_config(git, "HEAD^") is None


def test_sealed_files_outside_the_patterns_are_listed(repo: Repo) -> None:
    """A staged *.sealed.jsonl that no pattern covers is named in unguarded; a covered one is not."""
    repo.write_baseline("runs/a.sealed.jsonl", 2)
    repo.write_baseline("baselines/new.sealed.jsonl", 2)
    repo.git("add", "-A")
    result = staged(repo, patterns=("baselines/*",))
    assert result.unguarded == ("runs/a.sealed.jsonl",)
    assert staged(repo).unguarded == ()


def test_settings_change_names_what_changed() -> None:
    """settings_change says which of patterns and notes folder changed, and which settings judge."""
    before = GuardSettings(patterns=("a/*",), notes_dir="notes", source="BASE:toolreplay.toml")
    assert settings_change(before, before) is None
    after = GuardSettings(patterns=(), notes_dir="why", source="HEAD:toolreplay.toml")
    assert settings_change(before, after) == (
        "the drift-note guard's settings change (HEAD:toolreplay.toml against BASE:toolreplay.toml):"
        " baselines ['a/*'] -> [] (none); drift_notes 'notes' -> 'why'; this range is judged with"
        " BASE:toolreplay.toml"
    )
