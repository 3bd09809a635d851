"""The Inspect AI importer on hand-made logs: attachments, the zip checks, the format refusals."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from toolreplay import extras
from toolreplay.errors import InputError
from toolreplay.importers import import_file, import_value


def _log(messages: list[Any], attachments: dict[str, str] | None = None) -> dict[str, Any]:
    sample = {"id": 7, "epoch": 1, "messages": messages, "attachments": attachments or {}}
    return {"version": 2, "eval": {"task": "t"}, "samples": [sample]}


def test_attachments_are_put_back() -> None:
    """A result Inspect moved to the sample's attachments is the text it stands for."""
    digest = "0123456789abcdef0123456789abcdef"
    log = _log(
        [
            {"role": "assistant", "tool_calls": [{"id": "c", "function": "f", "arguments": {"a": 1}}]},
            {"role": "tool", "tool_call_id": "c", "function": "f", "content": f"attachment://{digest}"},
        ],
        {digest: "a long answer"},
    )
    (session,) = import_value(log, "inspect")
    assert session.label == "7-epoch-1"
    assert [(r.tool, r.args, r.response) for r in session.records] == [
        ("f", {"a": 1}, {"content": "a long answer"})
    ]


def _zip(tmp_path: Path, members: dict[str, bytes]) -> str:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    path = tmp_path / "log.eval"
    path.write_bytes(buffer.getvalue())
    return str(path)


def test_a_zip_that_is_not_an_inspect_log_is_refused(tmp_path: Path) -> None:
    """A zip archive without Inspect's header members is named as such."""
    path = _zip(tmp_path, {"a.txt": b"x"})
    with pytest.raises(InputError, match="a zip archive that is not an Inspect AI log"):
        list(import_file(path))


def test_a_zip_is_read_only_as_inspect(tmp_path: Path) -> None:
    """``--from otel`` on an .eval log says the archive is for --from inspect (no UTF-8 error)."""
    path = _zip(tmp_path, {"header.json": b"{}"})
    with pytest.raises(InputError, match=r"is a zip archive, which only --from inspect reads \(not otel\)"):
        list(import_file(path, "otel"))


def test_a_bad_sample_member_is_located(tmp_path: Path) -> None:
    """An error inside a sample names the member as the pointer's first token."""
    path = _zip(
        tmp_path, {"header.json": b"{}", "samples/1_epoch_1.json": b'{"messages": [{"role": "tool"}]}'}
    )
    with pytest.raises(InputError) as caught:
        list(import_file(path))
    assert (
        str(caught.value)
        == f'{path}: a tool message has no "tool_call_id" (at /samples~11_epoch_1.json/messages/0)'
    )


def test_zstandard_members_without_the_package_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real .eval log (Zstandard members) without the zstandard package says which extra to install."""
    monkeypatch.setitem(extras.EXTRAS, "inspect", ("toolreplay_no_such_module", "the 'zstandard' package"))
    monkeypatch.delattr(zipfile, "ZIP_ZSTANDARD", raising=False)
    path = str(ROOT / "tests" / "cases" / "import" / "framework-inspect-eval" / "input.eval")
    with pytest.raises(
        InputError, match=r"needs the 'zstandard' package: pip install 'toolreplay\[inspect\]'"
    ):
        list(import_file(path))


def test_an_archive_zipfile_cannot_read_is_an_input_error(tmp_path: Path) -> None:
    """A member that needs a newer zip version than Python reads is a one-line error, not a crash."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("header.json")
        archive.writestr(info, b"{}")
        info.extract_version = 253
    path = tmp_path / "log.eval"
    path.write_bytes(buffer.getvalue())
    with pytest.raises(InputError, match=r"zip file version 25\.3"):
        list(import_file(str(path)))
