"""toolreplay hook drift-note, hook verify, and validate on drift notes: exact output and exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from tests.gitrepo import Repo, note, sealed
from toolreplay.cli import cli

BASE = "baselines/checkout.sealed.jsonl"
V3, V4 = sealed(3)[1], sealed(4)[1]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_isolated: None) -> Repo:
    repo = Repo.create(tmp_path / "repo")
    repo.write_baseline(BASE, 3)
    repo.commit_all("baseline")
    monkeypatch.chdir(repo.path)
    return repo


def run(runner: CliRunner, *args: str) -> tuple[int, str]:
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_refusal_text(repo: Repo, runner: CliRunner) -> None:
    """A baseline change without a note exits 1 with the full refusal: baseline, heads, the note
    command, and the accept command that makes a run the baseline instead."""
    repo.write_baseline(BASE, 4)
    repo.git("add", "-A")
    code, out = run(runner, "hook", "drift-note")
    assert code == 1
    assert out == (
        "toolreplay: commit refused: a sealed baseline changes without a drift note for that exact change\n"
        "\n"
        f"baseline '{BASE}' (modified)\n"
        f"  from: {V3}\n"
        f"  to:   {V4}\n"
        "  no drift note staged under drift-notes/ names this baseline\n"
        f"  write the note: toolreplay note {BASE} -o drift-notes/checkout.md\n"
        "  then explain the drift in it and stage it under drift-notes/ in this same commit\n"
        f"  or make a run the baseline, with its notes: toolreplay accept {BASE} --run RUN --reason WHY\n"
        "\n"
        "A drift note is Markdown under drift-notes/: YAML front matter with baseline, from and to\n"
        "(no 'to' for a deletion), then why the drift is accepted. See docs/hooks.md.\n"
    )


def test_accepted_text(repo: Repo, runner: CliRunner) -> None:
    """With the matching note staged the guard exits 0 and names what it accepted."""
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    repo.git("add", "-A")
    assert run(runner, "hook", "drift-note") == (
        0,
        f"drift notes: every baseline change has its note ('{BASE}' by 'drift-notes/v4.md')\n",
    )


def test_nothing_to_judge(repo: Repo, runner: CliRunner) -> None:
    """A commit without baseline changes passes quietly."""
    assert run(runner, "hook", "drift-note") == (0, "drift notes: no sealed baseline changes\n")


def test_options_reach_the_guard(repo: Repo, runner: CliRunner) -> None:
    """--baselines and --notes-dir replace the defaults."""
    repo.write_baseline(BASE, 4)
    repo.write("accepted/v4.md", note(BASE, V3, V4))
    repo.git("add", "-A")
    assert run(runner, "hook", "drift-note", "--baselines", "elsewhere/*")[0] == 0
    assert run(runner, "hook", "drift-note", "--notes-dir", "accepted")[0] == 0
    assert run(runner, "hook", "drift-note")[0] == 1


def test_base_judges_committed_history(repo: Repo, runner: CliRunner) -> None:
    """--base REV judges REV..HEAD, catching a change committed with the hook skipped."""
    base = repo.head()
    repo.write_baseline(BASE, 4)
    repo.commit_all("skipped the hook")
    code, out = run(runner, "hook", "drift-note", "--base", base)
    assert code == 1
    assert out.startswith("toolreplay: a sealed baseline changes in this range without a drift note")
    assert f"  to:   {V4}\n" in out
    # a range is a pull request: the note is added to it, not staged in "this same commit"
    assert "  then explain the drift in it and add it under drift-notes/ in this pull request\n" in out
    assert "same commit" not in out


def test_outside_a_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: CliRunner) -> None:
    """Outside git the guard is a usage error: one line, exit 2."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    result = runner.invoke(cli, ["hook", "drift-note"], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.output.startswith("toolreplay: error: not inside a git work tree (")
    assert result.output.count("\n") == 1


@pytest.mark.parametrize(
    ("where", "how"),
    [
        *(("git folder", how) for how in (["--base", "HEAD"], ["--post-rewrite", "amend"])),
        *(("bare clone", how) for how in (["--base", "HEAD"], ["--post-rewrite", "amend"], [])),
    ],
)
def test_without_a_work_tree(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: CliRunner, how: list[str], where: str
) -> None:
    """In a bare repository, or a repository's .git folder, git reads commits but has no work
    tree: the guard says so, exit 2, even for a range that changes nothing. (The staged
    check in a .git folder judges the repository's index, which is there: it runs.)"""
    if where == "git folder":
        monkeypatch.chdir(repo.path / ".git")
    else:
        repo.git("clone", "-q", "--bare", str(repo.path), str(tmp_path / "bare.git"))
        monkeypatch.chdir(tmp_path / "bare.git")
    result = runner.invoke(cli, ["hook", "drift-note", *how], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("toolreplay: error: not inside a git work tree (")
    assert result.output.count("\n") == 1


def test_hook_verify(tmp_path: Path, runner: CliRunner) -> None:
    """hook verify checks every file, reports each on one line, and exits with the worst outcome."""
    good, bad, junk = (
        tmp_path / "good.sealed.jsonl",
        tmp_path / "bad.sealed.jsonl",
        tmp_path / "junk.sealed.jsonl",
    )
    good.write_text(sealed(2)[0])
    bad.write_text(sealed(2)[0].replace('"q1"', '"qX"'))
    junk.write_text("not json\n")
    assert run(runner, "hook", "verify", str(good)) == (
        0,
        f"{good}: chain intact, 2 links, head {sealed(2)[1]}\n",
    )
    code, out = run(runner, "hook", "verify", str(good), str(bad))
    assert code == 1
    assert out.splitlines()[1].startswith(
        f"{bad}:2: chain broken at index 1: digest does not match the link's content; expected "
    )
    code, out = run(runner, "hook", "verify", str(junk), str(bad))
    assert code == 2
    assert out.splitlines()[0].startswith(f"{junk}:1: ")
    assert len(out.splitlines()) == 2


def test_validate_tells_a_drift_note_by_its_folder(tmp_path: Path, runner: CliRunner) -> None:
    """A Markdown file in a drift-notes folder is validated as a drift note; elsewhere --kind says so."""
    folder = tmp_path / "drift-notes"
    folder.mkdir()
    good = folder / "ok.md"
    good.write_text(note(BASE, V3, V4))
    bad = folder / "bad.md"
    bad.write_text(note(BASE, V3, V4, prose=""))
    assert run(runner, "validate", str(good)) == (0, f"{good}: valid\n")
    code, out = run(runner, "validate", str(bad))
    assert code == 1
    assert out == (
        f"{bad}: invalid\n{bad}:8: the note has no explanation: below the front matter, write why this drift"
        " is accepted\n"
    )
    elsewhere = tmp_path / "accepted.md"
    elsewhere.write_text(note(BASE, V3, V4))
    assert run(runner, "validate", "--kind", "drift-note", str(elsewhere)) == (0, f"{elsewhere}: valid\n")
    assert run(runner, "validate", str(elsewhere))[0] == 2


def test_pasted_refusal_is_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_isolated: None) -> None:
    """The refusal pasted in docs/hooks.md is what the guard prints for that change."""
    from tests.conftest import ROOT, SAMPLES

    repo = Repo.create(tmp_path / "demo")
    monkeypatch.chdir(repo.path)
    runner = CliRunner()
    transcript = SAMPLES / "session-clean.jsonl"
    baseline = "baselines/docs-reader.sealed.jsonl"
    (repo.path / "baselines").mkdir()
    assert run(runner, "seal", str(transcript), "-o", baseline)[0] == 0
    repo.commit_all("baseline")
    changed = tmp_path / "changed.jsonl"
    changed.write_text(transcript.read_text().replace('"score": 0.92', '"score": 0.87'))
    assert run(runner, "seal", str(changed), "-o", baseline, "--force")[0] == 0
    repo.git("add", "-A")
    code, out = run(runner, "hook", "drift-note")
    assert code == 1
    for doc in ("docs/hooks.md",):
        text = (ROOT / doc).read_text()
        start = text.index("toolreplay: commit refused")
        pasted = text[start : text.index("See docs/hooks.md.", start) + len("See docs/hooks.md.")] + "\n"
        assert pasted == out, doc


def test_notes_dir_is_normalised_and_head_needs_base(repo: Repo, runner: CliRunner) -> None:
    """./drift-notes/ names the same folder as drift-notes; --head without --base is a usage error."""
    repo.write_baseline(BASE, 4)
    repo.git("add", "-A")
    code, out = run(runner, "hook", "drift-note", "--notes-dir", "./drift-notes/")
    assert code == 1 and "no drift note staged under drift-notes/ names this baseline" in out
    code, out = run(runner, "hook", "drift-note", "--head", "main")
    assert code == 2 and "--head only applies with --base" in out


def test_guard_takes_its_defaults_from_the_configuration(tmp_path: Path) -> None:
    """Without options the guard uses the config's baselines globs and drift_notes folder."""
    import subprocess
    import sys

    repo = tmp_path / "r"
    (repo / "recordings").mkdir(parents=True)
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }

    def git(*args: str) -> None:
        subprocess.run(
            ["git", *args], cwd=repo, check=True, capture_output=True, env={**__import__("os").environ, **env}
        )

    git("init", "-q")
    (repo / "toolreplay.toml").write_text('baselines = ["recordings/*.rec"]\ndrift_notes = "why"\n')
    sealed_bytes = subprocess.run(
        [sys.executable, "-m", "toolreplay", "seal", str(ROOT / "samples" / "session-clean.jsonl")],
        capture_output=True,
        check=True,
    ).stdout
    (repo / "recordings" / "a.rec").write_bytes(sealed_bytes)
    git("add", "-A")
    proc = subprocess.run(
        [sys.executable, "-m", "toolreplay", "hook", "drift-note"], cwd=repo, capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "recordings/a.rec" in proc.stdout
    assert "why/" in proc.stdout


def test_base_is_judged_with_the_base_configuration(repo: Repo, runner: CliRunner) -> None:
    """--base judges the range with REV's configuration and warns that the range changes it."""
    repo.write("toolreplay.toml", 'baselines = ["baselines/*.sealed.jsonl"]\n')
    repo.commit_all("config")
    base = repo.head()
    repo.write("toolreplay.toml", 'baselines = ["nothing/*"]\n')
    repo.write_baseline(BASE, 4)
    repo.commit_all("switch the guard off and change the baseline")
    code, out = run(runner, "hook", "drift-note", "--base", base)
    assert code == 1
    assert f"baseline '{BASE}' (modified)\n" in out
    assert out.endswith(
        "\nwarning: the drift-note guard's settings change (HEAD:toolreplay.toml against"
        f" {base}:toolreplay.toml): baselines ['baselines/*.sealed.jsonl'] -> ['nothing/*'];"
        f" this range is judged with {base}:toolreplay.toml\n"
    )


def test_sealed_file_outside_the_patterns_warns(repo: Repo, runner: CliRunner) -> None:
    """Staged or in a range, a sealed file outside the patterns passes with a warning naming both."""
    repo.write("toolreplay.toml", 'baselines = ["baselines/*.sealed.jsonl"]\n')
    repo.commit_all("config")
    base = repo.head()
    repo.write_baseline("runs/today.sealed.jsonl", 2)
    repo.git("add", "-A")
    warning = (
        "warning: 'runs/today.sealed.jsonl' is a sealed transcript, but no baseline pattern"
        " ('baselines/*.sealed.jsonl') covers it, so the guard does not judge it;"
        " if it is a baseline, add a pattern for it\n"
    )
    assert run(runner, "hook", "drift-note") == (0, "drift notes: no sealed baseline changes\n" + warning)
    repo.commit_all("a sealed run")
    assert run(runner, "hook", "drift-note", "--base", base) == (
        0,
        "drift notes: no sealed baseline changes\n" + warning,
    )


def test_staged_config_is_read_from_the_index(repo: Repo, runner: CliRunner) -> None:
    """The staged version of toolreplay.toml counts, not the working tree's; an invalid one is exit 2."""
    repo.write("toolreplay.toml", 'baselines = ["elsewhere/*"]\n')
    repo.git("add", "toolreplay.toml")
    repo.write("toolreplay.toml", 'baselines = ["baselines/*"]\n')  # not staged
    repo.write_baseline(BASE, 4)
    repo.git("add", BASE)
    code, out = run(runner, "hook", "drift-note")
    assert code == 0 and "warning: 'baselines/checkout.sealed.jsonl' is a sealed transcript" in out
    repo.write("toolreplay.toml", "baselines = [\n")
    repo.git("add", "toolreplay.toml")
    code, out = run(runner, "hook", "drift-note")
    assert code == 2
    assert out.startswith("toolreplay: error: toolreplay.toml (staged): invalid TOML: ")


def test_post_rewrite_after_a_rebase_says_it_does_not_judge(repo: Repo, runner: CliRunner) -> None:
    """After a rebase the hook says the pull request's check judges it; an unknown command is exit 2."""
    assert run(runner, "hook", "drift-note", "--post-rewrite", "rebase") == (
        0,
        "drift notes: a rebase is not judged here; the pull request's check (--base) judges it\n",
    )
    assert run(runner, "hook", "drift-note", "--post-rewrite", "squash")[0] == 2


def test_a_revision_that_looks_like_an_option_is_refused(repo: Repo, runner: CliRunner) -> None:
    """--base/--head that start with '-' never reach git as options: exit 2, one line."""
    for args in (["--base", "--output=x"], ["--base", "HEAD", "--head", "-p"]):
        code, out = run(runner, "hook", "drift-note", *args)
        assert code == 2, args
        assert out.startswith("toolreplay: error: not a revision: '-") and out.count("\n") == 1


def test_base_catches_an_amend_that_dropped_the_note(repo: Repo, runner: CliRunner) -> None:
    """An amend made without the hooks that drops a note is refused by the CI form (--base)."""
    base = repo.head()
    repo.write_baseline(BASE, 4)
    repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    repo.commit_all("v4 with its note")
    assert run(runner, "hook", "drift-note", "--base", base)[0] == 0
    repo.git("rm", "-q", "drift-notes/v4.md")
    repo.git("commit", "-q", "--amend", "--no-verify", "--no-edit")
    code, out = run(runner, "hook", "drift-note", "--base", base)
    assert code == 1
    assert f"baseline '{BASE}' (modified)\n  from: {V3}\n  to:   {V4}\n" in out


def test_a_config_in_a_subfolder_is_the_guards_as_it_is_the_pull_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_isolated: None, runner: CliRunner
) -> None:
    """With the only configuration in sub/, the hook judges with its baselines and notes folder
    (as check --base does), so the note the pull request's check accepts is accepted at commit."""
    repo = Repo.create(tmp_path / "repo")
    repo.write("sub/toolreplay.toml", 'baselines = ["baselines/*.sealed.jsonl"]\ndrift_notes = "notes"\n')
    baseline = "sub/baselines/checkout.sealed.jsonl"
    repo.write_baseline(baseline, 3)
    repo.commit_all("baseline")
    monkeypatch.chdir(repo.path)
    repo.write_baseline(baseline, 4)
    repo.write("sub/notes/checkout.md", note(baseline, V3, V4))
    repo.git("add", "-A")
    code, out = run(runner, "hook", "drift-note")
    assert (code, out) == (
        0,
        f"drift notes: every baseline change has its note ('{baseline}' by 'sub/notes/checkout.md')\n",
    )
    repo.git("commit", "-q", "--no-verify", "-m", "re-record")
    code, out = run(runner, "check", "--config", "sub/toolreplay.toml", "--base", "HEAD~1")
    assert code == 0 and out.endswith("drift notes: every baseline change in HEAD~1...HEAD has its note\n")
