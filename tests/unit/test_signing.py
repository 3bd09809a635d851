"""Unit tests of the signing module: DSSE encoding, statement, key handling."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolreplay import signing
from toolreplay.errors import InputError


def test_pae_matches_the_dsse_spec_vector() -> None:
    """The pre-authentication encoding is DSSE v1's, byte for byte (the spec's own example)."""
    assert signing.pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_statement_payload_is_canonical_json() -> None:
    """The signed payload is canonical JSON of count, head and the statement type."""
    payload = signing.Statement(head="ab" * 32, count=3).payload()
    assert payload == (
        b'{"count":3,"head":"' + b"ab" * 32 + b'","type":"https://schemas.toolreplay.dev/v1/seal-statement"}'
    )


def test_sign_then_check_round_trips(tmp_path: Path) -> None:
    """A statement signed with a fresh key checks with its public key, and not against another head."""
    private_pem, public_pem = signing.generate_keypair()
    (tmp_path / "k").write_bytes(private_pem)
    (tmp_path / "k.pub").write_bytes(public_pem)
    statement = signing.Statement(head="0" * 64, count=0)
    sig = tmp_path / "s.sig"
    sig.write_text(signing.sign(statement, signing.load_private_key(str(tmp_path / "k"))))
    public = signing.load_public_key(str(tmp_path / "k.pub"))
    good = signing.check(str(sig), public, statement)
    assert good.problem == "" and good.signed == statement and len(good.keyid) == 64
    bad = signing.check(str(sig), public, signing.Statement(head="1" * 64, count=0))
    assert bad.problem.startswith("signed head 000")


def test_non_key_files_are_usage_errors(tmp_path: Path) -> None:
    """A file that is not a PEM key is refused with its path."""
    path = tmp_path / "junk"
    path.write_text("hello")
    with pytest.raises(InputError, match="not a PEM private key"):
        signing.load_private_key(str(path))
    with pytest.raises(InputError, match="not a PEM public key"):
        signing.load_public_key(str(path))
