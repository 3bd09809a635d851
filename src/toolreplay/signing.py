"""Detached Ed25519 signatures over a sealed transcript's head and length (docs/spec.md §1.3).

A chain proves its links follow one another; a signature over ``(head, count)`` by a
key the verifier trusts proves the file is the one that was signed, so a cut tail or a
re-sealed forgery no longer passes. The signature file is a DSSE envelope
(https://github.com/secure-systems-lab/dsse) whose payload is the canonical JSON
statement ``{"count": N, "head": DIGEST, "type": STATEMENT_TYPE}`` and whose
``payloadType`` is ``PAYLOAD_TYPE``. The signature is over DSSE's pre-authentication
encoding of the two, never over the bare payload.

Keys are PEM: PKCS#8 private keys and SubjectPublicKeyInfo public keys, as
``toolreplay keygen`` or ``openssl genpkey -algorithm ed25519`` write them. The
``cryptography`` package is an optional extra (``toolreplay[sign]``), imported only here.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from toolreplay.canonical import canonical, decode
from toolreplay.errors import InputError, ToolreplayError
from toolreplay.escape import one_line
from toolreplay.extras import require
from toolreplay.transcript import read_input

if TYPE_CHECKING:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

PAYLOAD_TYPE = "application/vnd.toolreplay.seal+json"
STATEMENT_TYPE = "https://schemas.toolreplay.dev/v1/seal-statement"
_MAX_SIGNATURE_FILE = 64 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class Statement:
    """What a signature vouches for: the chain's head digest and its number of links."""

    head: str
    count: int

    def payload(self) -> bytes:
        return canonical({"count": self.count, "head": self.head, "type": STATEMENT_TYPE}).encode("ascii")


@dataclass(frozen=True, slots=True, kw_only=True)
class SignatureCheck:
    """The outcome of checking a signature file against a key and a chain."""

    keyid: str
    #: what was signed, when a signature by this key verified
    signed: Statement | None
    #: why the check failed; empty when the signature is valid and matches the chain
    problem: str = ""


class _Ed25519(NamedTuple):
    """What toolreplay uses of cryptography."""

    #: cryptography.hazmat.primitives.serialization: PEM in and out
    serialization: Any
    private_key: type[Ed25519PrivateKey]
    public_key: type[Ed25519PublicKey]
    invalid_signature: type[InvalidSignature]


def _crypto() -> _Ed25519:
    """cryptography (the ``sign`` extra), imported here alone: only signing, keygen and
    ``verify --key`` need it; without it they say how to install it."""
    require("sign", "signing", error=ToolreplayError)
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

    # (the key classes are abstract: cryptography's backend gives the concrete ones)
    return _Ed25519(serialization, Ed25519PrivateKey, Ed25519PublicKey, InvalidSignature)  # type: ignore[type-abstract]


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: what is actually signed."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def keyid(public: Ed25519PublicKey) -> str:
    """SHA-256 (hex) of the raw 32-byte public key: names a key without trusting the name."""
    serialization = _crypto().serialization
    raw = public.public_bytes(encoding=serialization.Encoding.Raw, format=serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def _read(path: str, limit: int) -> bytes:
    data = read_input(path, limit + 1)
    if len(data) > limit:
        raise InputError(f"is larger than {limit} bytes: not a key or signature file", path=path)
    return data


def load_private_key(path: str) -> Ed25519PrivateKey:
    """Read an unencrypted PEM (PKCS#8) Ed25519 private key."""
    crypto = _crypto()
    data = _read(path, _MAX_SIGNATURE_FILE)
    try:
        key = crypto.serialization.load_pem_private_key(data, password=None)
    except TypeError as err:
        raise InputError("the private key is encrypted; give an unencrypted PEM key", path=path) from err
    except ValueError as err:
        raise InputError("not a PEM private key", path=path) from err
    if not isinstance(key, crypto.private_key):
        raise InputError("not an Ed25519 key (toolreplay signs with Ed25519 only)", path=path)
    return key


def load_public_key(path: str) -> Ed25519PublicKey:
    """Read a PEM (SubjectPublicKeyInfo) Ed25519 public key."""
    crypto = _crypto()
    data = _read(path, _MAX_SIGNATURE_FILE)
    if b"PRIVATE KEY" in data:
        raise InputError("is a private key; verify with the public key", path=path)
    try:
        key = crypto.serialization.load_pem_public_key(data)
    except ValueError as err:
        raise InputError("not a PEM public key", path=path) from err
    if not isinstance(key, crypto.public_key):
        raise InputError("not an Ed25519 key (toolreplay signs with Ed25519 only)", path=path)
    return key


def generate_keypair() -> tuple[bytes, bytes]:
    """A new Ed25519 key pair as (private PKCS#8 PEM, public SubjectPublicKeyInfo PEM)."""
    crypto = _crypto()
    serialization = crypto.serialization
    key = crypto.private_key.generate()
    private: bytes = key.private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.PKCS8,
        encryption_algorithm=serialization.NoEncryption(),
    )
    public: bytes = key.public_key().public_bytes(
        encoding=serialization.Encoding.PEM, format=serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


def sign(statement: Statement, key: Ed25519PrivateKey) -> str:
    """The DSSE envelope (JSON text, one trailing newline) signing ``statement``."""
    payload = statement.payload()
    signature = key.sign(pae(PAYLOAD_TYPE, payload))
    envelope = {
        "payload": base64.b64encode(payload).decode("ascii"),
        "payloadType": PAYLOAD_TYPE,
        "signatures": [
            {"keyid": keyid(key.public_key()), "sig": base64.b64encode(signature).decode("ascii")}
        ],
    }
    return json.dumps(envelope, indent=2, sort_keys=True) + "\n"


def _b64(text: Any, path: str, pointer: str) -> bytes:
    if not isinstance(text, str):
        raise InputError("must be a base64 string", path=path, pointer=pointer)
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as err:
        raise InputError("is not valid base64", path=path, pointer=pointer) from err


def read_envelope(path: str) -> tuple[str, bytes, list[bytes]]:
    """Read a DSSE envelope: (payloadType, payload, signatures). Shape errors are usage errors."""
    try:
        value = decode(_read(path, _MAX_SIGNATURE_FILE))
    except InputError as err:
        if err.path is not None:
            raise
        raise InputError(err.problem, path=path, pointer=err.pointer) from err
    if not isinstance(value, dict):
        raise InputError("a signature file must hold a DSSE envelope (a JSON object)", path=path)
    payload_type = value.get("payloadType")
    if not isinstance(payload_type, str):
        raise InputError('missing or non-string "payloadType"', path=path, pointer="/payloadType")
    payload = _b64(value.get("payload"), path, "/payload")
    return payload_type, payload, _signatures(value.get("signatures"), path)


def _signatures(signatures: Any, path: str) -> list[bytes]:
    """The envelope's signatures: a non-empty array of objects, each with a base64 ``sig``."""
    if not isinstance(signatures, list) or not signatures:
        raise InputError('"signatures" must be a non-empty array', path=path, pointer="/signatures")
    sigs = []
    for i, entry in enumerate(signatures):
        if not isinstance(entry, dict):
            raise InputError("must be an object", path=path, pointer=f"/signatures/{i}")
        sigs.append(_b64(entry.get("sig"), path, f"/signatures/{i}/sig"))
    return sigs


def _statement(payload: bytes) -> Statement | None:
    try:
        value = decode(payload)  # the strict decoder: bounded depth, no duplicate keys
    except InputError:
        return None
    return _statement_of(value)


def _statement_of(value: Any) -> Statement | None:
    """The seal statement a decoded payload is (None: it is none)."""
    if not isinstance(value, dict) or value.get("type") != STATEMENT_TYPE:
        return None
    head, count = value.get("head"), value.get("count")
    if not isinstance(head, str) or type(count) is not int:
        return None
    return Statement(head=head, count=count)


def check(path: str, key: Ed25519PublicKey, actual: Statement) -> SignatureCheck:
    """Check the envelope at ``path`` with ``key`` and compare what it signed with ``actual``."""
    invalid_signature = _crypto().invalid_signature
    payload_type, payload, sigs = read_envelope(path)
    kid = keyid(key)
    if payload_type != PAYLOAD_TYPE:
        return SignatureCheck(keyid=kid, signed=None, problem=f"payloadType is not {PAYLOAD_TYPE}")
    message = pae(payload_type, payload)
    for sig in sigs:
        try:
            key.verify(sig, message)
        except invalid_signature:
            continue
        signed = _statement(payload)
        if signed is None:
            return SignatureCheck(
                keyid=kid, signed=None, problem="the signed payload is not a seal statement"
            )
        if signed != actual:
            problem = (
                # (the signed head is the signer's text: a digest, or anything, escaped)
                f"signed head {one_line(signed.head)} over {signed.count} links;"
                f" the file has head {actual.head} over {actual.count} links"
            )
            return SignatureCheck(keyid=kid, signed=signed, problem=problem)
        return SignatureCheck(keyid=kid, signed=signed)
    return SignatureCheck(keyid=kid, signed=None, problem="no signature in the file verifies with this key")
