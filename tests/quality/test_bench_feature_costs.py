"""bench/bench_feature_costs.py runs end to end on breast cancer (a smoke test of the
script and of its table: no timing is judged)."""

import pytest
from _shared_data import bench_module


def _table_rows(text):
    """The rows of the one markdown table of ``text``, as lists of cells (header first,
    the separator line dropped); checks every row has the header's number of cells."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert lines, text
    assert all(line.endswith("|") for line in lines), text
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    header, separator, body = rows[0], rows[1], rows[2:]
    assert all(set(cell) <= set("-:") and cell for cell in separator), lines[1]
    assert all(len(row) == len(header) for row in [separator, *body]), text
    return [header, *body]


def test_feature_costs_benchmark_prints_a_table_where_costs_lower_the_cost(capsys):
    pytest.importorskip("sklearn")
    script = bench_module("bench_feature_costs")
    assert script.main(["--repeats", "1", "--datasets", "breast_cancer"]) == 0
    stdout = capsys.readouterr().out
    assert "python " in stdout and "scikit-learn " in stdout and "gpu_tree " in stdout

    header, *body = _table_rows(stdout)
    assert header[:3] == ["data", "max_depth", "cost criterion"]
    column = {name: k for k, name in enumerate(header)}
    methods = ["no costs", "tan_schlimmer", "nunez w=0.5", "nunez w=1", "nunez w=2"]
    assert [(row[0], row[1], row[2]) for row in body] == [
        ("breast_cancer", depth, method) for depth in ("6", "full") for method in methods
    ]
    for depth in ("6", "full"):
        rows = {row[2]: row for row in body if row[1] == depth}
        cost = {method: float(row[column["mean cost / row"]]) for method, row in rows.items()}
        blind = cost.pop("no costs")
        assert blind > 0
        # The group costs (1 / 5 / 20) steer the cost-sensitive trees to the cheap
        # "mean" features: each pays at most what the cost-blind tree pays per row.
        assert all(value <= blind for value in cost.values()), (depth, blind, cost)
        for row in rows.values():
            assert 0.5 <= float(row[column["accuracy"]]) <= 1.0
            assert int(row[column["leaves"]]) >= 2
            assert 1 <= int(row[column["features used"]]) <= 30
            assert float(row[column["fit s (median)"]]) > 0
