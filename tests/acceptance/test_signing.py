"""sign / verify --key / keygen through the real CLI: a signature anchors head and length."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES
from toolreplay.cli import cli


@pytest.fixture
def keys(tmp_path: Path, runner: CliRunner) -> tuple[Path, Path]:
    private = tmp_path / "toolreplay.key"
    result = runner.invoke(cli, ["keygen", str(private)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return private, tmp_path / "toolreplay.key.pub"


@pytest.fixture
def signed(tmp_path: Path, runner: CliRunner, keys: tuple[Path, Path]) -> Path:
    sealed = tmp_path / "session.sealed.jsonl"
    runner.invoke(
        cli, ["seal", str(SAMPLES / "session-dirty.jsonl"), "-o", str(sealed)], catch_exceptions=False
    )
    result = runner.invoke(cli, ["sign", str(sealed), "--key", str(keys[0])], catch_exceptions=False)
    assert result.exit_code == 0 and result.output == ""
    return sealed


def verify(runner: CliRunner, sealed: Path, public: Path, signature: Path) -> tuple[int, str]:
    result = runner.invoke(
        cli,
        ["verify", str(sealed), "--key", str(public), "--signature", str(signature)],
        catch_exceptions=False,
    )
    return result.exit_code, result.output


def test_signed_file_verifies_with_the_public_key(
    runner: CliRunner, signed: Path, keys: tuple[Path, Path]
) -> None:
    """verify --key prints the chain lines, an anchor line and a valid signature line; exit 0."""
    result = runner.invoke(cli, ["verify", str(signed), "--key", str(keys[1])], catch_exceptions=False)
    lines = result.output.splitlines()
    assert result.exit_code == 0
    assert lines[:2] == ["chain: intact", "links: 6"]
    assert lines[3] == "anchor: signature"
    assert lines[4].startswith("signature: valid: head and count signed by key ")
    assert len(lines) == 5


def test_envelope_is_dsse_over_head_and_count(signed: Path) -> None:
    """The .sig file is a DSSE envelope whose payload is the canonical {count, head, type} statement."""
    import base64

    envelope = json.loads(Path(str(signed) + ".sig").read_text())
    assert envelope["payloadType"] == "application/vnd.toolreplay.seal+json"
    statement = json.loads(base64.b64decode(envelope["payload"]))
    head = json.loads(signed.read_text().splitlines()[-1])["digest"]
    assert statement == {"count": 6, "head": head, "type": "https://schemas.toolreplay.dev/v1/seal-statement"}
    assert len(base64.b64decode(envelope["signatures"][0]["sig"])) == 64


def test_every_truncation_fails(runner: CliRunner, keys: tuple[Path, Path], tmp_path: Path) -> None:
    """Every cut of a signed file, by whole links or by bytes, fails verify --key.

    The one exception is dropping only the final newline, which docs/spec.md §1.1 accepts and
    which leaves every link, the head and the count as they were. (Small records keep
    the number of cuts, one CLI run each, low.)
    """
    transcript = tmp_path / "tiny.jsonl"
    transcript.write_text(
        "".join(f'{{"index":{i},"tool":"t","args":{{"n":{i}}},"response":{{}}}}\n' for i in range(3))
    )
    signed = tmp_path / "tiny.sealed.jsonl"
    runner.invoke(cli, ["seal", str(transcript), "-o", str(signed)], catch_exceptions=False)
    runner.invoke(cli, ["sign", str(signed), "--key", str(keys[0])], catch_exceptions=False)
    data = signed.read_bytes()
    assert len(data) > 500
    signature = Path(str(signed) + ".sig")
    cut = tmp_path / "cut.sealed.jsonl"
    boundaries = {0} | {i + 1 for i, byte in enumerate(data) if byte == ord("\n")}
    whole = 0
    for length in range(len(data) - 1):
        cut.write_bytes(data[:length])
        code, output = verify(runner, cut, keys[1], signature)
        assert code != 0, f"a cut at byte {length} passed"
        if length in boundaries:  # whole links: the chain holds, the signature does not
            assert code == 1 and "signature: invalid: signed head" in output, length
            whole += 1
    assert whole == 3  # 0, 1 and 2 links kept
    cut.write_bytes(data[:-1])
    assert verify(runner, cut, keys[1], signature)[0] == 0


def test_resealed_edit_fails(
    runner: CliRunner, signed: Path, keys: tuple[Path, Path], tmp_path: Path
) -> None:
    """An edited transcript sealed again has an intact chain but fails the signature (exit 1)."""
    edited = tmp_path / "edited.jsonl"
    edited.write_text((SAMPLES / "session-dirty.jsonl").read_text().replace("docs/notes.md", "/etc/passwd"))
    forged = tmp_path / "forged.sealed.jsonl"
    runner.invoke(cli, ["seal", str(edited), "-o", str(forged)], catch_exceptions=False)
    code, output = verify(runner, forged, keys[1], Path(str(signed) + ".sig"))
    assert code == 1
    assert "chain: intact" in output
    assert "signature: invalid: signed head" in output and "over 6 links; the file has head" in output


def test_another_key_fails(runner: CliRunner, signed: Path, tmp_path: Path) -> None:
    """A signature checked with someone else's public key is invalid (exit 1)."""
    other = tmp_path / "other.key"
    runner.invoke(cli, ["keygen", str(other)], catch_exceptions=False)
    code, output = verify(runner, signed, Path(str(other) + ".pub"), Path(str(signed) + ".sig"))
    assert code == 1
    assert "signature: invalid: no signature in the file verifies with this key" in output


@pytest.mark.parametrize("fmt", ["text", "github", "markdown"])
def test_a_signed_head_is_the_signers_text_and_stays_inert(
    runner: CliRunner, signed: Path, keys: tuple[Path, Path], fmt: str
) -> None:
    """A statement signed with the key whose head is not a digest (a bidi override, a
    zero-width space, a line break) is escaped in the finding in every format."""
    from toolreplay import signing

    key = signing.load_private_key(str(keys[0]))
    path = Path(str(signed) + ".sig")
    path.write_text(signing.sign(signing.Statement(head="ab\u202ecd\u200b\n::warning::x", count=6), key))
    result = runner.invoke(
        cli, ["verify", str(signed), "--key", str(keys[1]), "--format", fmt], catch_exceptions=False
    )
    assert result.exit_code == 1
    assert "signed head ab\\u202ecd\\u200b\\n::warning::x over 6 links" in result.output
    assert not any(ch in result.output for ch in "\u202e\u200b")


def test_tampered_envelope_fails(runner: CliRunner, signed: Path, keys: tuple[Path, Path]) -> None:
    """Swapping the payload for a statement of another head invalidates the signature."""
    import base64

    path = Path(str(signed) + ".sig")
    envelope = json.loads(path.read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["count"] = 5
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    path.write_text(json.dumps(envelope))
    code, output = verify(runner, signed, keys[1], path)
    assert code == 1 and "no signature in the file verifies" in output


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("not json", "invalid JSON"),
        ("[]", "DSSE envelope"),
        ('{"payloadType": "x", "payload": "!!", "signatures": []}', "not valid base64 (at /payload)"),
        ('{"payloadType": "x", "payload": "", "signatures": []}', "non-empty array (at /signatures)"),
    ],
)
def test_malformed_signature_file_is_a_usage_error(
    runner: CliRunner, signed: Path, keys: tuple[Path, Path], content: str, problem: str
) -> None:
    """A signature file that is not a DSSE envelope is exit 2 with one line naming the file."""
    path = Path(str(signed) + ".sig")
    path.write_text(content)
    result = runner.invoke(cli, ["verify", str(signed), "--key", str(keys[1])], catch_exceptions=False)
    assert result.exit_code == 2
    assert problem in result.output and str(path) in result.output
    assert len(result.output.splitlines()) == 1


def test_missing_signature_and_wrong_key_kind_are_usage_errors(
    runner: CliRunner, tmp_path: Path, keys: tuple[Path, Path]
) -> None:
    """No .sig file, or a private key given to verify, is exit 2 with a one-line reason."""
    sealed = tmp_path / "s.sealed.jsonl"
    sealed.write_text("")
    result = runner.invoke(cli, ["verify", str(sealed), "--key", str(keys[1])], catch_exceptions=False)
    assert result.exit_code == 2 and "s.sealed.jsonl.sig: no such file" in result.output
    result = runner.invoke(cli, ["verify", str(sealed), "--key", str(keys[0])], catch_exceptions=False)
    assert result.exit_code == 2 and "is a private key" in result.output


def test_sign_refuses_a_broken_chain(runner: CliRunner, signed: Path, keys: tuple[Path, Path]) -> None:
    """sign will not vouch for a chain that does not hold: exit 1 and no signature written."""
    signed.write_text(signed.read_text().replace("docs/notes.md", "x"))
    Path(str(signed) + ".sig").unlink()
    result = runner.invoke(cli, ["sign", str(signed), "--key", str(keys[0])], catch_exceptions=False)
    assert result.exit_code == 1
    assert "not signed: the chain is broken at index 4" in result.output
    assert not Path(str(signed) + ".sig").exists()


def test_keygen_never_overwrites(runner: CliRunner, keys: tuple[Path, Path]) -> None:
    """keygen refuses to replace an existing key (exit 2) and leaves it unchanged."""
    before = keys[0].read_bytes()
    result = runner.invoke(cli, ["keygen", str(keys[0])], catch_exceptions=False)
    assert result.exit_code == 2 and "already exists" in result.output
    assert keys[0].read_bytes() == before
    assert keys[0].stat().st_mode & 0o077 == 0


def test_verify_without_key_keeps_its_output(runner: CliRunner, signed: Path) -> None:
    """Without --key, verify prints exactly the lines it printed before signatures existed."""
    result = runner.invoke(cli, ["verify", str(signed)], catch_exceptions=False)
    lines = result.output.splitlines()
    assert [line.split(":")[0] for line in lines] == ["chain", "links", "head", "anchor"]
    assert lines[3].startswith("anchor: none: ")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_openssl_keys_work(runner: CliRunner, tmp_path: Path, signed: Path) -> None:
    """Keys made by the documented openssl commands sign and verify like keygen's."""
    private, public = tmp_path / "ossl.key", tmp_path / "ossl.pub"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(private)], check=True)
    subprocess.run(["openssl", "pkey", "-in", str(private), "-pubout", "-out", str(public)], check=True)
    sig = tmp_path / "ossl.sig"
    result = runner.invoke(
        cli, ["sign", str(signed), "--key", str(private), "-o", str(sig)], catch_exceptions=False
    )
    assert result.exit_code == 0
    assert verify(runner, signed, public, sig)[0] == 0


def test_signature_file_passes_its_published_schema(runner: CliRunner, signed: Path) -> None:
    """validate recognises SEALED.sig by name and the envelope sign writes is valid against its schema."""
    result = runner.invoke(cli, ["validate", str(signed) + ".sig"], catch_exceptions=False)
    assert result.exit_code == 0 and result.output.endswith(": valid\n")


def test_signature_option_needs_key(runner: CliRunner, signed: Path) -> None:
    """--signature without --key is a usage error, not a silently unchecked anchor."""
    result = runner.invoke(cli, ["verify", str(signed), "--signature", str(signed) + ".sig"])
    assert result.exit_code == 2 and "--signature needs --key" in result.output
