"""A reader for ARFF files (Weka's attribute-relation format), with no dependency.

Handles quoted attribute names (``'on thyroxine'``), nominal ``{a, b}``, numeric and
string attribute types (a string attribute is read as categories), ``%`` comments, quoted
values and ``?`` for a missing value. Sparse ARFF (``{index value, ...}`` rows) is not
supported and is refused, naming the line.

Kept rather than a library's: scipy.io.arff, the maintained reader,
refuses string attributes ("String attributes not supported yet"), which this one reads,
and would make scipy a dependency of the command line; liac-arff has had no release
since 2020.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

_ATTRIBUTE = re.compile(r"@attribute\s+('[^']*'|\"[^\"]*\"|\S+)\s+(.*)$", re.IGNORECASE)


def read_arff(path) -> tuple[list[str], list[bool], list[list[str | None]]]:
    """(attribute names, whether each is nominal, rows of strings with None for '?')."""
    names, nominal, rows, in_data = [], [], [], False
    with open(Path(path), encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            text = line.strip()
            if not text or text.startswith("%"):
                continue
            if not in_data:
                match = _ATTRIBUTE.match(text)
                if match:
                    name = match.group(1).strip("'\"")
                    if name in names:  # columns would be mis-mapped: refuse, as for CSV
                        raise ValueError(
                            f"{path}, line {number}: the attribute name {name!r} appears twice"
                        )
                    names.append(name)
                    nominal.append(match.group(2).lstrip().startswith("{"))
                elif text.lower().startswith("@data"):
                    in_data = True
                continue
            if text.startswith("{"):
                raise ValueError(f"{path}, line {number}: sparse ARFF rows are not supported")
            for row in csv.reader([text], quotechar="'", skipinitialspace=True):
                if len(row) != len(names):
                    raise ValueError(
                        f"{path}, line {number}: {len(row)} values, but {len(names)} attributes"
                    )
                rows.append([None if value == "?" else value for value in row])
    return names, nominal, rows
