"""The list of slow tests (tests/_slow_tests.py) and how it is made."""

import re

from _slow_tests import LIST, REPO, node_id, read_list, slow_tests

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.quality.test_layers" name="test_a" time="0.5" />
<testcase classname="tests.quality.test_layers" name="test_b[x-1]" time="1.0" />
<testcase classname="tests.growing.test_grower.TestSomething" name="test_c" time="12.25" />
<testcase classname="tests.quality.test_layers" name="test_b[x-1]" time="3" />
</testsuite></testsuites>
"""


def test_the_cases_of_a_second_or_more_are_listed_by_node_id(tmp_path):
    report = tmp_path / "run.xml"
    report.write_text(REPORT)
    assert slow_tests(report, seconds=1.0) == [
        "tests/quality/test_layers.py::test_b[x-1]",
        "tests/growing/test_grower.py::TestSomething::test_c",
    ]
    assert slow_tests(report, seconds=0.5)[0] == "tests/quality/test_layers.py::test_a"
    assert slow_tests(report, seconds=10) == ["tests/growing/test_grower.py::TestSomething::test_c"]
    assert node_id("tests.quality.test_layers", "test_a") == "tests/quality/test_layers.py::test_a"


def test_the_list_names_tests_that_exist():
    listed = read_list()
    assert len(listed) > 100, LIST
    for test in listed:
        module, *_, name = test.split("::")
        function = name.split("[")[0]
        source = (REPO / module).read_text()
        assert re.search(rf"^\s*(async )?def {function}\(", source, re.MULTILINE), test
