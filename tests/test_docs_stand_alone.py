"""The shipped tree never points at documents users do not get.

cclab was planned from design notes that are not part of the repository. A
comment, doc or test that cites them leaves the reader with a dead end, so
every such reference must be replaced by the primary source (the Linux file,
RFC section or paper) or by a page under docs/ (docs/validation.md lists every
check and published result). This test walks the shipped folders and fails
listing each offending line.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ["README.md", "docs", "python", "crates", "examples", "scripts", "tests"]
SKIP_DIRS = {"__pycache__", "target", ".pytest_cache", "node_modules", ".git"}
# Built from pieces so that this file does not match itself.
NOTES = "(DESIGN|VALIDATION|STYLE)"
PATTERN = re.compile(NOTES + r"\.md|" + r"\.\." + "/shared")


def shipped_files():
    for name in SHIPPED:
        top = ROOT / name
        if top.is_file():
            yield top
            continue
        for p in sorted(top.rglob("*")):
            if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(ROOT).parts):
                yield p


def test_pattern_catches_what_it_must():
    for bad in ["see " + "VALIDATION" + ".md P1", "DESIGN" + ".md, kernel", "../" + "shared/traces", "STYLE" + ".md"]:
        assert PATTERN.search(bad), bad
    for fine in ["docs/validation.md", "shared/traces", "README.md"]:
        assert not PATTERN.search(fine), fine


def test_no_reference_to_unshipped_documents():
    offending = []
    n = 0
    for path in shipped_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binaries (the built extension, images)
        n += 1
        for i, line in enumerate(text.splitlines(), 1):
            if PATTERN.search(line):
                offending.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()[:160]}")
    assert n > 100, f"only {n} text files found under {SHIPPED}: is ROOT right? ({ROOT})"
    assert not offending, "references to documents that do not ship:\n" + "\n".join(offending)
