"""Which tests are slow: ``tests/slow_tests.txt`` lists them, one pytest node id a line,
and tests/conftest.py marks them ``slow``. ``pytest -m "not slow"`` then runs the rest in
a few minutes, for everyday work; CI runs everything.

The list is made from the JUnit report of a whole run (CI's, or ``pytest
--junitxml=run.xml``):

    python tests/_slow_tests.py run.xml     # rewrites tests/slow_tests.txt

A test is slow where it took :data:`SLOW_SECONDS` or more. A run on an empty kernel cache
charges each kernel's first compile to the test that called it first: those are listed
too, though on a warm cache they are quick. Tests written since the last report are not
listed until the list is made again; a test marked ``@pytest.mark.slow`` in its file is
slow whatever the list says.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

SLOW_SECONDS = 0.5
LIST = Path(__file__).with_name("slow_tests.txt")
REPO = Path(__file__).resolve().parents[1]


def node_id(classname: str, name: str, repo: Path = REPO) -> str:
    """The pytest node id of a JUnit test case: ``classname`` is the module's dotted
    path, then any classes (``tests.test_x.TestY``)."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        module = Path(*parts[:end]).with_suffix(".py")
        if (repo / module).is_file():
            return "::".join([module.as_posix(), *parts[end:], name])
    raise ValueError(f"no test module for {classname!r}")


def slow_tests(report: Path, seconds: float = SLOW_SECONDS) -> list[str]:
    """The node ids of the test cases that took ``seconds`` or more in ``report``, in
    the order they ran; a case's setup and teardown count with its call."""
    slow = []
    for case in ElementTree.parse(report).iter("testcase"):
        if float(case.get("time", 0.0)) >= seconds:
            slow.append(node_id(case.get("classname", ""), case.get("name", "")))
    return list(dict.fromkeys(slow))


def read_list(path: Path = LIST) -> set[str]:
    """The listed node ids (none where there is no list)."""
    if not path.is_file():
        return set()
    lines = (line.strip() for line in path.read_text().splitlines())
    return {line for line in lines if line and not line.startswith("#")}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tests/_slow_tests.py REPORT.xml", file=sys.stderr)
        return 2
    slow = slow_tests(Path(argv[0]))
    heading = (
        f"# Tests that took {SLOW_SECONDS:g} s or more in a whole run, marked slow by\n"
        "# tests/conftest.py. Made by tests/_slow_tests.py from a JUnit report.\n"
    )
    LIST.write_text(heading + "".join(f"{test}\n" for test in slow))
    print(f"{len(slow)} slow tests listed in {LIST}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
