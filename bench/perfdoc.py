"""Where a benchmark's report may go in ``docs/``: only into a section a page has made room for.

``docs/performance.md`` and ``docs/reliability.md`` are reference pages (what is measured, how to
rerun it, the current figures in tables), not logs: a benchmark prints its whole report, and its
figures are carried into the tables by hand. A page that keeps a generated section marks it with
``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``, and only then does ``write_section`` replace
it; it never appends a dated report to a page without one.
"""

from __future__ import annotations

from pathlib import Path


def section_markers(name: str) -> tuple[str, str]:
    return f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"


def write_section(path: Path, name: str, section: str) -> None:
    """Replace the ``name`` section of ``path`` with ``section`` (which carries its own markers);
    a page without that section is left as it is, and the caller's printed report is the record."""
    begin, end = section_markers(name)
    text = path.read_text() if path.exists() else ""
    if begin not in text or end not in text:
        print(
            f"{path.name} keeps no generated '{name}' section: nothing written there "
            "(carry the figures above into its tables)",
            flush=True,
        )
        return
    before, rest = text.split(begin, 1)
    _, after = rest.split(end, 1)
    path.write_text(before + section + after)
