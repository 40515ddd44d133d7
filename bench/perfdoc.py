"""``docs/performance.md`` is shared by every benchmark: each one rewrites only its own section,
between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``, and leaves the others as they are."""

from __future__ import annotations

from pathlib import Path


def section_markers(name: str) -> tuple[str, str]:
    return f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"


def write_section(path: Path, name: str, section: str) -> None:
    """Replace the ``name`` section of ``path`` with ``section`` (which carries its own markers),
    or append it when the file has no such section yet."""
    begin, end = section_markers(name)
    text = path.read_text() if path.exists() else "# Performance\n"
    if begin in text and end in text:
        before, rest = text.split(begin, 1)
        _, after = rest.split(end, 1)
        text = before + section + after
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)
