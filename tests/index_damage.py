"""Damage done to an index directory's files, as a disk, a crash or a careless `cp` does it."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

FOOTER_TAIL = struct.Struct("<II")  # Tantivy's footer: JSON, its length, a magic number


def overwrite(path: Path, start: float, end: float, byte: int, *, keep_checksum: bool = False) -> None:
    """Fills the part [start, end) (fractions) of a Tantivy segment file's body with `byte`.
    `keep_checksum`: the footer gets the new CRC, so the damage passes a checksum test and only
    shows when Tantivy reads that part (a bug, or a disk that returns wrong data)."""
    data = bytearray(path.read_bytes())
    length, magic = FOOTER_TAIL.unpack(data[-FOOTER_TAIL.size :])
    body = len(data) - FOOTER_TAIL.size - length
    data[int(body * start) : int(body * end)] = bytes([byte]) * (int(body * end) - int(body * start))
    footer = data[body : body + length]
    if keep_checksum:
        fields = json.loads(footer)
        fields["crc"] = zlib.crc32(bytes(data[:body]))
        footer = bytearray(json.dumps(fields, separators=(",", ":")).encode())
    path.write_bytes(bytes(data[:body]) + footer + FOOTER_TAIL.pack(len(footer), magic))


def segment_file(version: Path, component: str) -> Path:
    return next(version.glob(f"*.{component}"))
