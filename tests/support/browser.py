"""Headless Chromium for page tests: having it, its command line, what it saw."""

from __future__ import annotations

import os
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def ensure_chromium() -> str:
    """Debian's chromium, installed if missing (as root, with apt-get); fails if it cannot be.

    A page test that cannot run fails with the reason rather than being skipped,
    because an unchecked page is how a broken page ships.
    """
    done = subprocess.run(
        ["bash", str(ROOT / "scripts/ensure-chromium.sh")],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    print(done.stdout, done.stderr, sep="\n")
    if done.returncode != 0 or not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"chromium is needed for the page tests and could not be had "
            f"(ensure-chromium.sh exit {done.returncode}): {done.stderr.strip() or done.stdout}"
        )
    return CHROMIUM


def run_chromium(binary: str, profile: Path, *args: str) -> str:
    """Run headless Chromium with ``args`` (a URL last); its stdout, or a failed test."""
    done = subprocess.run(
        [*chromium_args(binary, profile), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def chromium_args(binary: str, profile: Path) -> list[str]:
    return [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1280,2000",
    ]


def png_facts(data: bytes) -> tuple[int, int, int]:
    """(width, height, distinct colours among the first rows) of an 8-bit RGB(A) PNG.

    Rows are unfiltered one by one (filters 0-4 of the PNG spec) and decoding stops
    as soon as a few colours are seen, so a real page costs a handful of rows.
    """
    assert data[:8] == PNG_SIGNATURE, "not a PNG"
    pos, idat, header = 8, bytearray(), b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6), f"unexpected PNG format depth={depth} type={colour}"
    bpp = 4 if colour == 6 else 3
    raw = zlib.decompress(bytes(idat))
    stride = width * bpp
    previous = bytearray(stride)
    colours: set[bytes] = set()
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = previous[i]
            c = previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 0xFF
        colours.update(bytes(line[i : i + 3]) for i in range(0, stride, bpp))
        if len(colours) >= 8:
            break
        previous = line
    return width, height, len(colours)
