"""Reading an Inspect AI ``.eval`` log: a zip archive of JSON members.

Inspect writes ``header.json`` (and, while it runs, ``_journal/start.json``), one member per
sample and epoch under ``samples/`` (``samples/ID_epoch_N.json``) and summaries. Each sample
member becomes one item, in the archive's order, located by the member's name as the first
token of its JSON pointer (``/samples~1s1_epoch_1.json/messages/3``).

Members are stored, deflated or (Inspect's default since 2026) compressed with Zstandard.
The standard library reads the first two (and Zstandard from Python 3.14); before that,
Zstandard members need the ``zstandard`` package, which Inspect AI itself installs and the
``inspect`` extra brings.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterator

from toolreplay.errors import InputError
from toolreplay.extras import require
from toolreplay.importers.base import Item, Location
from toolreplay.importers.source import MAX_INPUT_BYTES, decode_value
from toolreplay.locate import pointer_token

#: how every zip archive starts (a local file header)
ZIP_MAGIC = b"PK\x03\x04"
#: the members only an Inspect log has
_MARKS = ("header.json", "_journal/start.json")
#: what zipfile (and a decompressor) raise for a damaged, encrypted or unsupported archive
_UNREADABLE = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    NotImplementedError,
    RuntimeError,
    EOFError,
    OSError,
    ValueError,
    struct.error,
    zlib.error,
)
#: the zip method number of Zstandard
_ZSTANDARD = 93
#: a local file header: its fixed part, then the name and the extra field
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")


def eval_items(data: bytes, path: str) -> Iterator[Item]:
    """The samples of an ``.eval`` archive's bytes as items; ``path`` names it in errors."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except _UNREADABLE as err:
        raise InputError(f"not a readable zip archive: {err}", path=path) from err
    names = archive.namelist()
    if not any(mark in names for mark in _MARKS):
        raise InputError(
            "a zip archive that is not an Inspect AI log (no header.json or _journal/start.json)", path=path
        )
    for info in archive.infolist():
        if info.filename.startswith("samples/") and info.filename.endswith(".json"):
            yield _sample(archive, info, data, path)


def _sample(archive: zipfile.ZipFile, info: zipfile.ZipInfo, data: bytes, path: str) -> Item:
    """One sample member as an item, located by its name."""
    location = Location(None, "/" + pointer_token(info.filename))
    raw = _member(archive, info, data, path)
    try:
        return Item(location, decode_value(raw))
    except InputError as err:
        raise InputError(err.problem, path=path, pointer=location.pointer) from err


def _member_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo, data: bytes) -> bytes:
    """A member's bytes as stored: zstandard ourselves where this Python's zipfile cannot."""
    if info.compress_type == _ZSTANDARD and not _stdlib_zstandard():
        return _zstandard(_compressed(info, data), info.file_size)
    return archive.read(info)


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, data: bytes, path: str) -> bytes:
    """A member's bytes, checked against the size and CRC the archive declares."""
    where = f"member {info.filename}"
    if info.file_size > MAX_INPUT_BYTES:
        raise InputError(f"{where} is over the {MAX_INPUT_BYTES}-byte limit", path=path)
    try:
        raw = _member_bytes(archive, info, data)
    except _UNREADABLE as err:
        raise InputError(f"{where} cannot be read: {err}", path=path) from err
    if len(raw) != info.file_size or zlib.crc32(raw) != info.CRC:
        raise InputError(f"{where} is damaged (its size or CRC does not match)", path=path)
    return raw


def _stdlib_zstandard() -> bool:
    """Whether this Python's zipfile reads Zstandard members itself (3.14 and later)."""
    return hasattr(zipfile, "ZIP_ZSTANDARD")


def _compressed(info: zipfile.ZipInfo, data: bytes) -> bytes:
    """A member's compressed bytes, found through its local file header."""
    header = data[info.header_offset : info.header_offset + _LOCAL_HEADER.size]
    if len(header) != _LOCAL_HEADER.size or header[:4] != ZIP_MAGIC:
        raise ValueError("bad local file header")
    fields = _LOCAL_HEADER.unpack(header)
    start = info.header_offset + _LOCAL_HEADER.size + fields[10] + fields[11]
    return data[start : start + info.compress_size]


def _zstandard(compressed: bytes, size: int) -> bytes:
    """Decompress a Zstandard member with the ``zstandard`` package, no more than ``size`` bytes."""
    require("inspect", "reading an Inspect AI log compressed with Zstandard (before Python 3.14)")
    import zstandard

    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(compressed)) as reader:
            out = reader.read(size + 1)
    except zstandard.ZstdError as err:
        raise ValueError(str(err)) from err
    if len(out) > size:
        raise ValueError("holds more than its declared size")
    return out
