"""Progress: estimators' verbose=0/1/2 (silent, tqdm bars, a line per step), drawn from
the library's log records; a program's own logging is left as it was."""

from __future__ import annotations

import io
import logging

import pytest

from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor
from gpu_tree.datasets import make_higgs_like
from gpu_tree.utils.progress import check_verbose, estimator_display, logger, step


@pytest.fixture
def data():
    return make_higgs_like(3000, 8, random_state=0)


def _handlers():
    return list(logger.handlers), logger.level


def test_verbose_0_prints_nothing_and_installs_nothing(data, capsys):
    before = _handlers()
    DecisionTreeClassifier(max_depth=3, verbose=0).fit(*data)
    assert capsys.readouterr() == ("", "")
    assert _handlers() == before


def test_verbose_1_draws_bars_to_max_depth_and_removes_them(data, capsys):
    before = _handlers()
    DecisionTreeClassifier(max_depth=5, verbose=1).fit(*data)
    out, err = capsys.readouterr()
    assert out == ""
    assert "gpu_tree: growing: 100%" in err and "5/5" in err
    assert "gpu_tree: binning: 100%" in err and "8/8" in err
    # No rate of levels or features ("170879.05feature/s", issue 45): only bytes have one.
    assert "/s" not in err and "s/" not in err
    assert "tree grown: depth 5" in err  # the stage's last record, kept as a line
    assert "level 0:" not in err  # the levels are the bar, not lines
    assert _handlers() == before


def test_a_bar_ends_full_where_growth_stops_before_max_depth(capsys):
    X, y = make_higgs_like(200, 4, random_state=1)
    model = DecisionTreeClassifier(max_depth=40, verbose=1).fit(X, y)
    err = capsys.readouterr().err
    depth = model.get_depth()
    assert depth < 40 and f"{depth}/{depth}" in err and "growing: 100%" in err


def test_unlimited_depth_counts_levels_without_a_total(data, capsys):
    DecisionTreeRegressor(verbose=1, min_samples_leaf=50).fit(*data)
    err = capsys.readouterr().err
    assert "growing" in err and "/9223372036854775807" not in err
    assert "level [" in err and "%|" not in err.split("growing")[-1]  # a count, no bar


def test_verbose_2_prints_a_line_per_step_including_pruning(data, capsys, monkeypatch):
    import gpu_tree.growing.grower as grower_module

    monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", 0)  # levels one by one
    DecisionTreeClassifier(max_depth=3, verbose=2, ccp_alpha=0.002).fit(*data)
    err = capsys.readouterr().err
    for line in ("bin edges of 8 features", "binned 3,000 rows", "level 0:", "level 2:"):
        assert line in err, line
    assert "tree grown: depth 3" in err and "pruned (ccp_alpha=0.002)" in err
    assert "%|" not in err  # no bars


def test_a_programs_own_handler_and_level_are_kept(data, capsys):
    mine = io.StringIO()
    handler = logging.StreamHandler(mine)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        DecisionTreeClassifier(max_depth=2, verbose=1).fit(*data)
        assert handler in logger.handlers and logger.level == logging.DEBUG
        assert "bin edges" in mine.getvalue()  # its DEBUG records still reach it
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    assert "growing: 100%" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [3, -1, "yes", 1.0, None])
def test_bad_verbose_is_refused_by_name(bad, data):
    with pytest.raises(
        ValueError, match=r"verbose=.*choose 0 \(silent\), 1 \(progress bars\) or 2"
    ):
        DecisionTreeClassifier(verbose=bad).fit(*data)


def test_booleans_are_taken_as_scikit_learn_users_pass_them():
    assert check_verbose(True) == 1 and check_verbose(False) == 0


def test_a_bytes_stage_is_scaled_and_a_display_error_never_stops_work():
    stream = io.StringIO()
    with estimator_display(1, stream):
        logger.info("reading", extra=step("reading", 0, 5_000_000, unit="B"))
        logger.info("read", extra=step("reading", 5_000_000, 5_000_000, unit="B", done=True))
    assert "4.77M/4.77M" in stream.getvalue()  # binary megabytes, as tqdm scales bytes
    assert "read" in stream.getvalue()
    with estimator_display(1, io.StringIO()):  # a malformed record: reported, not raised
        previous, logging.raiseExceptions = logging.raiseExceptions, False
        try:
            logger.info("odd", extra={"progress": {"stage": "odd"}})
        finally:
            logging.raiseExceptions = previous


def test_verbose_is_not_kept_in_a_model_file(data, tmp_path):
    import gpu_tree

    path = tmp_path / "m.json"
    DecisionTreeClassifier(max_depth=2, verbose=2).fit(*data).save(path)
    assert '"verbose"' not in path.read_text()
    assert gpu_tree.load(path).verbose == 0


def test_level_lines_follow_the_levels_and_finished_subtrees_say_so(data, capsys):
    """Subtrees finished in one compiled call reach levels that level-wise growth has yet
    to report: one line per call names their range, a level-wise level is reported once,
    and the bar never goes back (issue 45: levels 4, 5, 3, 5, 4, 5 on the terminal)."""
    X, y = make_higgs_like(20_000, 8, random_state=2)
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger.addHandler(handler)
    try:
        DecisionTreeClassifier(max_depth=9, verbose=2).fit(X, y)
    finally:
        logger.removeHandler(handler)
    lines = [r.getMessage() for r in records if r.getMessage().startswith("level")]
    level_wise = [line.split(":")[0] for line in lines if "finished subtrees" not in line]
    finished = [line for line in lines if "finished subtrees" in line]
    assert level_wise and finished  # both kinds of growth ran
    assert len(level_wise) == len(set(level_wise)), level_wise
    assert all(line.startswith(("levels ", "level ")) for line in finished)
    reached = [
        r.progress["reached"]
        for r in records
        if getattr(r, "progress", None) and r.progress["stage"] == "growing"
    ]
    assert reached == sorted(reached), reached


# -- what a terminal shows (issue 45, item 5) ------------------------------------------------
def _forest_csv(folder):
    import numpy as np

    rng = np.random.default_rng(0)
    n = 3000
    a, b = rng.normal(size=n), rng.normal(size=n)
    c = rng.choice(["x", "y", "z"], n)
    y = np.where(a + rng.normal(size=n) * 0.3 > 0, "yes", "no")
    path = folder / "forest.csv"
    rows = zip(a, b, c, y, strict=True)
    path.write_text("a,b,c,y\n" + "".join(f"{p},{q},{r},{s}\n" for p, q, r, s in rows))
    return path


def _bar_lines(lines):
    return [line for line in lines if "%|" in line]


def test_a_forest_on_a_terminal_ends_its_bars_before_the_results(tmp_path):
    import sys

    from _terminal import run_on_terminal

    data = _forest_csv(tmp_path)
    code = "import sys; from gpu_tree.app.launch import main; sys.argv[0] = 'gputree'; main()"
    shown = run_on_terminal(
        [sys.executable, "-c", code, "train", data.name, "-t", "y", "--forest", "5"]
        + ["-o", "forest.json", "--device", "cpu"],
        cwd=tmp_path,
    )
    lines = shown.lines
    assert shown.returncode == 0, "\n".join(lines)
    trained = next(k for k, line in enumerate(lines) if "trained RandomForestClassifier" in line)
    # The results start lines of their own (they were glued to the bar: "…tree]t" /
    # "rained RandomForestClassifier"), and no bar is drawn again below them.
    assert lines[trained].startswith("trained RandomForestClassifier"), lines
    assert not _bar_lines(lines[trained:]), lines
    assert lines[-1] == "model saved to forest.json", lines
    # The forest's bar ends full, once; a tree's levels (a bar inside it) leave no bar
    # over it, and the growth's last record stays as a line.
    forest_bars = [line for line in _bar_lines(lines) if "forest:" in line]
    assert len(forest_bars) == 1 and "100%" in forest_bars[0] and "5/5" in forest_bars[0]
    assert forest_bars[0].startswith("gputree: forest:"), lines
    assert not [line for line in lines if "growing:" in line], lines
    assert any(
        line.startswith("gputree [") and "5 trees grown: depth up to" in line for line in lines
    )
    assert any(line.startswith("gputree [") and "5 of 5 trees grown" in line for line in lines)


def test_the_compile_notice_is_written_above_an_open_bar(monkeypatch):
    import io

    from _terminal import screen_lines

    from gpu_tree.kernels import compilation
    from gpu_tree.utils.progress import install_handler

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setitem(compilation._notice, "said", False)
    monkeypatch.setitem(compilation._notice, "when", "terminal")
    monkeypatch.setitem(compilation._notice, "program", "gputree")
    remove = install_handler(terminal, verbose=False, quiet=False)
    try:
        logger.info("growing", extra=step("forest", 1, 5, unit="tree"))
        assert compilation.say_compiling_kernels(stream=terminal)
        logger.info("grown", extra=step("forest", 2, 5, unit="tree"))
        logger.info("done", extra=step("forest", 5, 5, unit="tree", done=True))
    finally:
        remove()
    lines = screen_lines(terminal.getvalue().encode(), columns=80)
    assert lines[0] == "gputree: compiling kernels (first run only)", lines
    assert lines[1].startswith("gputree: forest: 100%") and lines[1].endswith("5/5 [00:00<00:00]")
    assert len(lines) == 3 and lines[2].startswith("gputree [") and lines[2].endswith(" done")
