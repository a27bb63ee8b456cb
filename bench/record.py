"""The dated table of ``docs/performance.md``: each benchmark run with ``--record`` writes its own row (what
was measured, the command, the result with its baseline and ratio, the date and the machine), replacing the
row it wrote before. The rest of the page (the method) is prose kept by hand; the rows never are.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
BEGIN = "<!-- measurements: one row per benchmark, written by `bench/*.py --record`; not edited by hand -->"
END = "<!-- end of measurements -->"
HEADER = "| benchmark | what | command | result | measured |\n|---|---|---|---|---|"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def machine() -> str:
    """This machine, as a row names it: cores and the Python and OS it ran on."""
    system = f"{platform.system()} {platform.machine()}"
    return f"{os.cpu_count()} cores, {system}, Python {platform.python_version()}"


def record(key: str, what: str, command: str, result: str, page: Path = PAGE) -> None:
    """Write (or replace) the row ``key`` of the measurements table in ``page``."""
    text = page.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{page}: no measurements table ({BEGIN!r} ... {END!r})")
    head, rest = text.split(BEGIN, 1)
    body, tail = rest.split(END, 1)
    rows = {}
    for line in body.strip().splitlines():
        if line.startswith("| `") or (line.startswith("| ") and not line.startswith(("| benchmark", "|---"))):
            rows[line.split("|")[1].strip()] = line
    today = dt.date.today().isoformat()
    name = f"`{key}`"
    rows[name] = (
        f"| {name} | {_cell(what)} | `{_cell(command)}` | {_cell(result)} | {today}, {_cell(machine())} |"
    )
    table = "\n".join([HEADER, *(rows[k] for k in sorted(rows))])
    page.write_text(f"{head}{BEGIN}\n{table}\n{END}{tail}", encoding="utf-8")
    print(f"recorded in {page}: {key}")
