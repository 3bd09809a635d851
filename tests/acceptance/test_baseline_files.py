"""Every file ``check`` treats as a baseline is a file the drift-note guard judges: symlinks,
patterns with ``./`` or a folder named like a pattern, ``..`` and submodules (docs/hooks.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.gitrepo import Repo, note, sealed
from toolreplay.cli import cli
from toolreplay.transcript import GENESIS

BASE = "baselines/checkout.sealed.jsonl"
V3, V4 = sealed(3)[1], sealed(4)[1]
#: a one-line sealed chain: as a symlink's target, git stores it as the symlink's blob
CHAIN_NAME, CHAIN_HEAD = sealed(1)[0].rstrip("\n"), sealed(1)[1]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_isolated: None) -> Repo:
    repo = Repo.create(tmp_path / "repo")
    repo.write("toolreplay.toml", 'baselines = ["baselines/*.sealed.jsonl"]\n')
    repo.write_baseline(BASE, 3)
    repo.commit_all("baseline")
    monkeypatch.chdir(repo.path)
    return repo


def run(runner: CliRunner, *args: str) -> tuple[int, str]:
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


# --- symlinks ---------------------------------------------------------------------------


def test_hook_refuses_a_symlink_baseline_even_with_a_note(repo: Repo, runner: CliRunner) -> None:
    """A symlink whose target name is a valid chain, staged with a note for that chain, is refused."""
    link = "baselines/linked.sealed.jsonl"
    repo.symlink(link, CHAIN_NAME)
    repo.write("drift-notes/linked.md", note(link, GENESIS, CHAIN_HEAD))
    repo.git("add", "-A")
    code, out = run(runner, "hook", "drift-note")
    assert code == 1
    assert (
        f"baseline '{link}' (added)\n"
        f"  from: {GENESIS}  (genesis: new baseline)\n"
        "  to:   none: not a regular file\n"
        f"  '{link}' is a symlink (mode 120000), where a baseline pattern reaches: git stores the name it"
        " points to there, so the guard cannot judge the baseline behind it\n"
        "  no note can accept it; a baseline is a regular file of this repository\n"
    ) in out


def test_range_refuses_a_symlink_baseline_even_with_a_note(repo: Repo, runner: CliRunner) -> None:
    """check --base fails on a symlink baseline the pull request adds, whatever note comes with it."""
    base = repo.head()
    link = "baselines/linked.sealed.jsonl"
    repo.symlink(link, CHAIN_NAME)
    repo.write("drift-notes/linked.md", note(link, GENESIS, CHAIN_HEAD))
    repo.commit_all("a symlink baseline, with a note")
    code, out = run(runner, "check", "--base", base)
    assert code == 1
    assert (
        f"missing-drift-note: baseline '{link}' (added): '{link}' is a symlink (mode 120000), where a"
        " baseline pattern reaches"
    ) in out


def test_check_refuses_a_symlink_baseline(repo: Repo, runner: CliRunner) -> None:
    """check reports a baseline that is a symlink, or lies under one, as unreadable (exit 1)."""
    repo.write_baseline("store/real.jsonl", 2)
    repo.symlink("baselines/linked.sealed.jsonl", "../store/real.jsonl")
    repo.symlink("baselines/more", "../store")
    repo.write_baseline("store/deep.sealed.jsonl", 2)
    repo.write("toolreplay.toml", 'baselines = ["baselines/*.sealed.jsonl", "baselines/*/*.sealed.jsonl"]\n')
    code, out = run(runner, "check")
    assert code == 1
    assert (
        "baselines/linked.sealed.jsonl: is a symlink: a baseline must be a regular file of this repository,"
        " since the drift-note guard judges only what git stores as a file\n"
    ) in out
    assert "baselines/more/deep.sealed.jsonl: lies under a symlink ('baselines/more'): a baseline" in out


def test_diff_and_note_refuse_a_symlink_baseline(repo: Repo, runner: CliRunner) -> None:
    """diff and note refuse a baseline given as a symlink: one line naming it, exit 2."""
    repo.symlink("baselines/linked.sealed.jsonl", "checkout.sealed.jsonl")
    repo.write("run.jsonl", "")
    message = (
        "toolreplay: error: baselines/linked.sealed.jsonl: is a symlink: a baseline must be a regular file"
        " (git stores a symlink as the name it points to, so the drift-note guard cannot judge the file"
        " behind it)\n"
    )
    assert run(runner, "diff", "baselines/linked.sealed.jsonl", "run.jsonl") == (2, message)
    assert run(runner, "note", "baselines/linked.sealed.jsonl") == (2, message)


def test_diff_and_note_refuse_a_baseline_under_a_symlinked_folder(repo: Repo, runner: CliRunner) -> None:
    """diff and note refuse a BASELINE under a symlinked folder of its repository, as check does:
    git stores the folder as a name, so an edit behind it never reaches the guard."""
    repo.write_baseline("store/deep.sealed.jsonl", 2)
    repo.symlink("baselines/more", "../store")
    repo.write("run.jsonl", "")
    deep = "baselines/more/deep.sealed.jsonl"
    message = (
        f"toolreplay: error: {deep}: lies under a symlink ('baselines/more'): a baseline must be a regular"
        " file (git stores a symlink as the name it points to, so the drift-note guard cannot judge the"
        " file behind it)\n"
    )
    assert run(runner, "diff", deep, "run.jsonl") == (2, message)
    assert run(runner, "note", deep) == (2, message)
    # the same file by its own path is a regular file of the repository
    assert run(runner, "diff", "store/deep.sealed.jsonl", "run.jsonl")[0] == 1


def test_verify_refuses_a_symlink_among_the_configured_baselines(repo: Repo, runner: CliRunner) -> None:
    """verify without SEALED verifies every baseline the config names, so it refuses a symlink among
    them, or one under a symlinked folder, as check does: exit 2 naming it, nothing verified. verify
    SEALED is given a sealed file (a receipt, a cassette), not a baseline: it follows the symlink."""
    assert run(runner, "verify")[0] == 0
    repo.symlink("baselines/linked.sealed.jsonl", "checkout.sealed.jsonl")
    repo.commit_all("a symlink, hooks skipped")
    reason = (
        "a baseline must be a regular file of this repository, since the drift-note guard judges only what"
        " git stores as a file\n"
    )
    used = "toolreplay: using config toolreplay.toml (baselines)\n"
    error = "toolreplay: error: baselines/linked.sealed.jsonl: is a symlink: "
    assert run(runner, "verify") == (2, used + error + reason)
    code, out = run(runner, "verify", "baselines/linked.sealed.jsonl")
    assert code == 0 and out.startswith("chain: intact\nlinks: 3\n")
    (repo.path / "baselines/linked.sealed.jsonl").unlink()
    repo.write_baseline("store/deep.sealed.jsonl", 2)
    repo.symlink("baselines/more", "../store")
    repo.write("toolreplay.toml", 'baselines = ["baselines/*.sealed.jsonl", "baselines/*/*.sealed.jsonl"]\n')
    error = "toolreplay: error: baselines/more/deep.sealed.jsonl: lies under a symlink ('baselines/more'): "
    assert run(runner, "verify") == (2, used + error + reason)


def test_note_counts_a_committed_symlink_as_no_baseline(repo: Repo, runner: CliRunner) -> None:
    """A baseline committed as a symlink and replaced by the file: note's from is the genesis value,
    as the guard's is, so the note it writes is the one the guard accepts."""
    link = "baselines/linked.sealed.jsonl"
    repo.symlink(link, CHAIN_NAME)
    repo.commit_all("a symlink, hooks skipped")
    (repo.path / link).unlink()
    repo.write_baseline(link, 2)
    assert run(runner, "note", link, "-o", "drift-notes/linked.md")[0] == 0
    assert f'from: "{GENESIS}"' in (repo.path / "drift-notes/linked.md").read_text()
    (repo.path / "drift-notes/linked.md").write_text(note(link, GENESIS, sealed(2)[1]))
    repo.git("add", "-A")
    assert run(runner, "hook", "drift-note")[0] == 0


# --- patterns ---------------------------------------------------------------------------


def test_a_dot_slash_pattern_is_guarded(repo: Repo, runner: CliRunner) -> None:
    """baselines = ["./baselines/*.sealed.jsonl"]: the hook and check --base judge the re-seal."""
    repo.write("toolreplay.toml", 'baselines = [".//baselines/./*.sealed.jsonl"]\n')
    repo.commit_all("config")
    base = repo.head()
    repo.write_baseline(BASE, 4)
    repo.git("add", "-A")
    code, out = run(runner, "hook", "drift-note")
    assert code == 1 and f"baseline '{BASE}' (modified)\n  from: {V3}\n  to:   {V4}\n" in out
    assert run(runner, "hook", "drift-note", "--baselines", "./baselines//*.sealed.jsonl")[0] == 1
    code, out = run(runner, "hook", "drift-note", "--baselines", "x/../baselines/*")
    assert code == 2 and out.startswith("toolreplay: error: --baselines 'x/../baselines/*' climbs out")
    repo.git("commit", "-q", "--no-verify", "-m", "re-seal without a note")
    code, out = run(runner, "check", "--base", base)
    assert code == 1
    assert f"missing-drift-note: baseline '{BASE}' (modified)" in out
    assert "unguarded-sealed-file" not in out


def test_a_config_folder_named_like_a_pattern_is_guarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_isolated: None, runner: CliRunner
) -> None:
    """A configuration in agents[1]/: its folder is a name, not a character class, for the guard."""
    repo = Repo.create(tmp_path / "repo")
    repo.write("agents[1]/toolreplay.toml", 'baselines = ["baselines/*.sealed.jsonl"]\n')
    baseline = "agents[1]/baselines/checkout.sealed.jsonl"
    repo.write_baseline(baseline, 3)
    repo.commit_all("baseline")
    monkeypatch.chdir(repo.path)
    base = repo.head()
    repo.write_baseline(baseline, 4)
    repo.git("add", "-A")
    code, out = run(runner, "hook", "drift-note")
    assert code == 1 and f"baseline '{baseline}' (modified)\n" in out
    repo.git("commit", "-q", "--no-verify", "-m", "re-seal without a note")
    code, out = run(runner, "check", "--config", "agents[1]/toolreplay.toml", "--base", base)
    assert code == 1 and "missing-drift-note: baseline 'agents[1]/baselines/checkout.sealed.jsonl'" in out


def test_a_pattern_out_of_the_config_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_isolated: None, runner: CliRunner
) -> None:
    """ "../common/*.sealed.jsonl" in agents/toolreplay.toml: check and the hook exit 2 naming it."""
    repo = Repo.create(tmp_path / "repo")
    repo.write("agents/toolreplay.toml", 'baselines = ["../common/*.sealed.jsonl"]\n')
    repo.write_baseline("common/checkout.sealed.jsonl", 3)
    repo.commit_all("baseline")
    monkeypatch.chdir(repo.path)
    problem = (
        """baselines glob "../common/*.sealed.jsonl" climbs out of its configuration's folder ('..');"""
        " a baseline must lie inside it (move the configuration up instead) (at /baselines/0)\n"
    )
    code, out = run(runner, "check", "--config", "agents/toolreplay.toml")
    assert (code, out) == (2, f"toolreplay: error: agents/toolreplay.toml: {problem}")
    repo.write_baseline("common/checkout.sealed.jsonl", 4)
    repo.git("add", "-A")
    code, out = run(runner, "hook", "drift-note")
    assert (code, out) == (2, f"toolreplay: error: agents/toolreplay.toml (staged): {problem}")


def test_a_pattern_the_pull_request_adds_is_judged(repo: Repo, runner: CliRunner) -> None:
    """A baseline check reads only through a pattern the pull request adds fails without its note,
    instead of passing with an advisory unguarded-sealed-file."""
    base = repo.head()
    repo.write("toolreplay.toml", 'baselines = ["baselines/*.sealed.jsonl", "more/*.sealed.jsonl"]\n')
    repo.write_baseline("more/new.sealed.jsonl", 2)
    repo.commit_all("a new pattern and a baseline under it, no note")
    code, out = run(runner, "check", "--base", base)
    assert code == 1
    assert "missing-drift-note: baseline 'more/new.sealed.jsonl' (added)" in out
    assert "unguarded-sealed-file" not in out


# --- submodules -------------------------------------------------------------------------


def test_baselines_in_a_submodule_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_isolated: None, runner: CliRunner
) -> None:
    """A re-seal committed inside a submodule the baseline patterns reach into: the hook refuses the
    new gitlink, and check, diff and note refuse the baseline files behind it."""
    vendor = Repo.create(tmp_path / "vendor")
    vendor.write_baseline("baselines/checkout.sealed.jsonl", 3)
    vendor.commit_all("baseline")
    repo = Repo.create(tmp_path / "repo")
    repo.write("toolreplay.toml", 'baselines = ["vendor/baselines/*.sealed.jsonl"]\n')
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(vendor.path), "vendor")
    repo.commit_all("vendor")
    monkeypatch.chdir(repo.path)
    inner = Repo(repo.path / "vendor")
    inner.write_baseline("baselines/checkout.sealed.jsonl", 4)
    inner.commit_all("re-seal")
    repo.git("add", "vendor")
    code, out = run(runner, "hook", "drift-note")
    assert code == 1
    assert (
        "baseline 'vendor' (modified)\n"
        f"  from: {GENESIS}  (genesis: new baseline)\n"
        "  to:   none: not a regular file\n"
        "  'vendor' is a submodule (mode 160000), where a baseline pattern reaches: git stores"
        " no file of this repository there, so the guard cannot judge the baseline behind it\n"
    ) in out
    code, out = run(runner, "check")
    assert code == 1
    assert (
        "vendor/baselines/checkout.sealed.jsonl: lies in another git repository ('vendor', a submodule,"
        " has its own .git): a baseline must be a regular file of this repository"
    ) in out
    # diff and note refuse it as a BASELINE too (from the repository's folders, or given whole)
    repo.write("run.jsonl", "")
    baseline = "vendor/baselines/checkout.sealed.jsonl"
    refusal = (
        ": lies in another git repository ('vendor', a submodule, has its own .git): a baseline must be a"
        " regular file of this repository (git stores a submodule as its commit, so the drift-note guard"
        " cannot judge the file in it)\n"
    )
    assert run(runner, "diff", baseline, "run.jsonl") == (2, f"toolreplay: error: {baseline}{refusal}")
    assert run(runner, "note", baseline) == (2, f"toolreplay: error: {baseline}{refusal}")
    whole = str(repo.path / baseline)
    given_whole = refusal.replace("'vendor'", repr(str(repo.path / "vendor")))
    assert run(runner, "note", whole) == (2, f"toolreplay: error: {whole}{given_whole}")
    # the same file through a symlinked folder above the repository is still in the submodule
    (tmp_path / "via").symlink_to(repo.path)
    linked = str(tmp_path / "via" / baseline)
    via_link = refusal.replace("'vendor'", repr(str(tmp_path / "via" / "vendor")))
    assert run(runner, "note", linked) == (2, f"toolreplay: error: {linked}{via_link}")
    # from inside the submodule, the file is that repository's own
    monkeypatch.chdir(repo.path / "vendor")
    code, out = run(runner, "diff", "baselines/checkout.sealed.jsonl", "../run.jsonl")
    assert (code, out.splitlines()[0]) == (1, "baseline: baselines/checkout.sealed.jsonl")  # compared
    # a linked work tree of the repository has a .git file too, but is no submodule
    monkeypatch.chdir(repo.path)
    repo.git("worktree", "add", "-q", str(tmp_path / "linked"))
    other = str(tmp_path / "linked" / "toolreplay.toml")
    assert "another git repository" not in run(runner, "diff", other, "run.jsonl")[1]
