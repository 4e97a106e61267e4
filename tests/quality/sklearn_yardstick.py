"""A yardstick: scikit-learn's own tree tests, run against gpu_tree's estimators.

scikit-learn ships its tree tests inside the installed package
(``sklearn/tree/tests/``). This script copies four of them (test_tree.py,
test_export.py, test_split.py, test_monotonic_tree.py) into a temporary directory,
rewrites each copy so that the estimator classes it imports from ``sklearn.tree`` and
``sklearn.ensemble`` (and, unless ``--sklearn-exports``, the export functions) are
gpu_tree's, runs pytest on the copies and summarises the outcome: counts per file, and
for every failing test the first line of its error, grouped into categories.

Nothing is written into the repository or into site-packages; the temporary directory
is removed at the end.

How the estimators are swapped in, and why this way:

* The copies keep their own ``from sklearn.tree import ...`` lines (they also import
  private helpers from there) and get one extra line after their import block that
  rebinds the estimator names to classes of a generated module,
  ``_gpu_tree_yardstick.py``. A textual rebinding is local to the copies: scikit-learn's
  own modules (its forests, its exporters) keep their own classes, which a monkeypatch
  of ``sklearn.tree`` could not promise.
* gpu_tree's trees default to ``splitter="hist"``; scikit-learn's to ``"best"`` (exact
  search). The generated classes are subclasses whose ``__init__`` lists every
  parameter of gpu_tree's, written out, with ``splitter="best"`` as the default
  (``ExtraTree*`` keep ``"random"``, extra-trees forests their own default: their
  thresholds are drawn). scikit-learn reads parameters from the ``__init__``
  signature, so ``get_params``, ``set_params`` and ``clone`` work as on the originals.
* The copies need scikit-learn's fixtures (``global_random_seed``, ``pyplot``, ...),
  which live in ``sklearn/conftest.py``: the generated conftest loads it as a plugin.

Usage::

    python tests/quality/sklearn_yardstick.py                  # all four files
    python tests/quality/sklearn_yardstick.py --files test_export.py --keyword export_text
    python tests/quality/sklearn_yardstick.py --out yardstick.json    # or .md
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

TEST_FILES = ("test_tree.py", "test_export.py", "test_split.py", "test_monotonic_tree.py")

# The names a copy may import from sklearn.tree / sklearn.ensemble that gpu_tree provides.
ESTIMATORS = (
    "DecisionTreeClassifier",
    "DecisionTreeRegressor",
    "ExtraTreeClassifier",
    "ExtraTreeRegressor",
    "RandomForestClassifier",
    "RandomForestRegressor",
    "ExtraTreesClassifier",
    "ExtraTreesRegressor",
)
EXPORTS = ("export_text", "export_graphviz", "plot_tree")

# Classes whose default splitter becomes "best". ExtraTree* default to "random" in
# both libraries; extra-trees forests draw thresholds whatever their splitter says.
BEST_BY_DEFAULT = {
    "DecisionTreeClassifier",
    "DecisionTreeRegressor",
    "RandomForestClassifier",
    "RandomForestRegressor",
}

# Failure categories: (name, why, regex), first match wins. The regex is searched in
# "test id, error's first line, its E lines, where it was raised" (categorise). Written
# from a full run (tests/quality/YARDSTICK.md): a test that fails for a new reason lands in
# "other", which is the group to read first after a change.
CATEGORIES = (
    (
        "scikit-learn's exporters refuse our trees",
        "with --sklearn-exports: scikit-learn's export_text/plot_tree validate "
        "isinstance(tree, sklearn's DecisionTree*)",
        r"parameter of (export_text|export_graphviz|plot_tree) must be an instance",
    ),
    (
        "multi-output y: not there yet",
        "refused with a clear ValueError: multi-output y with poisson or absolute_error, "
        "and multi-output classifiers' forests, files and exports (issue 22)",
        r"multi-output( y)? is not supported|multi-output y is fitted with criterion="
        r"|not saved to model files yet|does not draw multi-output classifiers",
    ),
    (
        "absolute_error: a sparse X in histogram mode",
        "refused with a clear ValueError naming the way out (splitter='best' reads it "
        "dense): not there yet",
        r"sparse X with criterion='absolute_error' needs splitter='best'",
    ),
    (
        "ties broken otherwise",
        "two splits (or both sides for missing values) score the same; scikit-learn's "
        "random feature order / right-first search picks the other one",
        r"^test_missing_values_best_splitter_on_equal_nodes_no_missing"
        r"|^test_missing_values_best_splitter_missing_both_classes_has_nan"
        r"|^test_export_text( |\[)|^test_export_text_feature_class_names_array_support",
    ),
    (
        "export layout differs",
        'our graphs set color="black", show the class in every box and label edges at '
        "0.85 x fontsize; log_loss trees are labelled entropy",
        r"^test_graphviz_toy|^test_graphviz_feature_class_names_array_support"
        r"|^test_plot_tree_|^test_criterion_in_gradient_boosting_graphviz\[log_loss",
    ),
    (
        "error message wording differs",
        "the right exception type, other words than the regex of scikit-learn's test",
        r"Regex pattern did not match",
    ),
    (
        "scikit-learn's low-level Tree object",
        "the test calls scikit-learn's Cython helpers (its pruning) on tree_",
        r"expected sklearn\.tree\._tree\.Tree",
    ),
    (
        "scikit-learn conventions not followed (on purpose)",
        "float64 thresholds (no float32 cast), no 1e-7 constant-feature threshold, NaN "
        "accepted in sparse X, present/missing splits with threshold inf, the "
        "friedman_mse warning at fit, timings (fit_stats_) in the pickle",
        r"^test_almost_constant_feature|^test_big_input|^test_huge_allocations"
        r"|^test_missing_value_errors|^test_random_splitter_missing_values_uses_non_missing"
        r"|^test_friedman_mse_deprecation|^test_deterministic_pickle",
    ),
    (
        "leaf value not the exact mean",
        "a regression node's value is centre + mean offset: -8.3e-17 where scikit-learn "
        "stores 0.0 for y = linspace(-2, 2, 10)",
        r"^test_1d_opposite_monotonicity_cst_data",
    ),
    ("other", "not matched by a rule above: read these first", r""),
)


def sklearn_tests_dir() -> Path | None:
    """The installed scikit-learn's tree tests, or None where they are not shipped."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or spec.origin is None:
        return None
    tests = Path(spec.origin).parent / "tree" / "tests"
    return tests if (tests / "test_export.py").is_file() else None


# -- the generated files ------------------------------------------------------------------
def shim_source() -> str:
    """``_gpu_tree_yardstick.py``: gpu_tree's estimators with scikit-learn's default
    splitter, each ``__init__`` written out parameter by parameter."""
    import gpu_tree

    lines = [
        '"""Generated by tests/quality/sklearn_yardstick.py: gpu_tree estimators, splitter="best"."""',
        "import gpu_tree as _gpu_tree",
        "from gpu_tree import export_graphviz, export_text, plot_tree  # noqa: F401",
        "",
    ]
    for name in ESTIMATORS:
        base = getattr(gpu_tree, name)
        signature = inspect.signature(base.__init__)
        parameters = []
        for p in signature.parameters.values():
            if p.name == "splitter" and name in BEST_BY_DEFAULT:
                p = p.replace(default="best")
            if p.default is not inspect.Parameter.empty:
                # The signature is written out as text: every default must read back.
                if ast.literal_eval(repr(p.default)) != p.default:
                    raise ValueError(f"{name}.{p.name}: default {p.default!r} has no literal")
            parameters.append(p)
        header = str(signature.replace(parameters=parameters))
        call = ", ".join(f"{p.name}={p.name}" for p in parameters if p.name != "self")
        lines += [
            "",
            f"class {name}(_gpu_tree.{name}):",
            f"    def __init__{header}:",
            f"        super().__init__({call})",
            "",
        ]
    return "\n".join(lines)


CONFTEST = '''\
"""Generated by tests/quality/sklearn_yardstick.py: scikit-learn's fixtures
(global_random_seed, pyplot, ...) for the copied test files."""
pytest_plugins = ["sklearn.conftest"]
'''


def rewrite(source: str, use_exports: bool) -> tuple[str, list[str]]:
    """The test file with its estimator (and export) names rebound to gpu_tree's, by one
    line inserted after its leading block of imports; and the names rebound."""
    module = ast.parse(source)
    wanted = set(ESTIMATORS) | (set(EXPORTS) if use_exports else set())
    names, last_import = [], None
    for node in module.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            last_import = node
            if isinstance(node, ast.ImportFrom) and node.module in (
                "sklearn.tree",
                "sklearn.ensemble",
            ):
                names += [a.asname or a.name for a in node.names if a.name in wanted]
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            break  # the docstring may come first; the first other statement ends imports
    if not names or last_import is None:
        return source, []
    lines = source.splitlines(keepends=True)
    rebind = f"from _gpu_tree_yardstick import {', '.join(names)}  # yardstick: gpu_tree's\n"
    lines.insert(last_import.end_lineno, rebind)
    return "".join(lines), names


# -- running ------------------------------------------------------------------------------
def run_pytest(workdir: Path, files, keyword, timeout, deselect) -> tuple[Path, float]:
    """pytest on the copies, in a child process (its imports and warnings stay out of
    this one), its progress on our stderr (stdout is the summary's); returns the JUnit
    XML report and the seconds it took."""
    report = workdir / "junit.xml"
    # An empty ini file makes workdir the rootdir and keeps the repository's pytest
    # settings (its addopts, filterwarnings) out of the run.
    (workdir / "pytest.ini").write_text("[pytest]\njunit_family = xunit1\n")
    command = [
        sys.executable,
        "-m",
        "pytest",
        *files,
        "-p",
        "no:cacheprovider",
        "-q",
        "--no-header",
        "-rN",
        f"--junitxml={report}",
        "-c",
        str(workdir / "pytest.ini"),
        "--rootdir",
        str(workdir),
    ]
    if importlib.util.find_spec("pytest_timeout") is not None:
        command.append(f"--timeout={timeout}")
    if keyword:
        command += ["-k", keyword]
    for test in deselect:
        command += ["--deselect", test]
    env = dict(os.environ)
    # Pickling tests and joblib workers import the generated module by name.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(workdir), env.get("PYTHONPATH")]))
    start = time.perf_counter()
    subprocess.run(command, cwd=workdir, env=env, stdout=sys.stderr, check=False)
    return report, time.perf_counter() - start


def first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def error_detail(text: str | None) -> tuple[str, str]:
    """From a failure's traceback: its first few ``E`` lines, joined (pytest's one-line
    message of a failed comparison is cut short; the ``E`` lines say what differed), and
    where the error was raised (the last ``path:line: Error`` line)."""
    lines = (text or "").splitlines()
    explained = [line[1:].strip() for line in lines if line.startswith("E ") and line[1:].strip()]
    raised = [line for line in lines if re.match(r"^\S+\.py:\d+: \w+", line)]
    return " | ".join(explained[:4])[:500], (raised[-1] if raised else "")


def read_report(report: Path) -> list[dict]:
    """One dict per test from pytest's JUnit XML: file, name, outcome, message."""
    results = []
    for case in ET.parse(report).getroot().iter("testcase"):
        file = case.get("file") or case.get("classname", "").split(".")[0] + ".py"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            found = case.find(tag)
            if found is not None:
                outcome = {"failure": "failed", "error": "errored"}.get(tag, tag)
                message = first_line(found.get("message")) or first_line(found.text)
                detail, raised_at = error_detail(found.text)
                break
        else:
            detail = raised_at = ""
        if outcome == "skipped" and found.get("type") == "pytest.xfail":
            outcome = "xfailed"
        results.append(
            {
                "file": Path(file).name,
                "test": case.get("name"),
                "outcome": outcome,
                "seconds": float(case.get("time") or 0.0),
                "message": message,
                "detail": detail,
                "raised_at": raised_at,
            }
        )
    return results


def categorise(result: dict) -> str:
    text = f"{result['test']} {result['message']} {result['detail']} {result['raised_at']}"
    for name, _, pattern in CATEGORIES:
        if re.search(pattern, text):
            return name
    return "other"


def summarise(results: list[dict], seconds: float, options: dict) -> dict:
    per_file = defaultdict(Counter)
    for r in results:
        per_file[r["file"]][r["outcome"]] += 1
    failures = [r for r in results if r["outcome"] in ("failed", "errored")]
    groups = defaultdict(list)
    for r in failures:
        groups[categorise(r)].append(r)
    slowest = sorted(results, key=lambda r: -r["seconds"])[:10]
    return {
        "options": options,
        "seconds": round(seconds, 1),
        "totals": dict(Counter(r["outcome"] for r in results)),
        "per_file": {f: dict(c) for f, c in sorted(per_file.items())},
        "categories": {
            name: [
                {k: r[k] for k in ("file", "test", "message", "detail", "raised_at")}
                for r in groups[name]
            ]
            for name, _, _ in CATEGORIES
            if groups[name]
        },
        "slowest": [
            {"test": f"{r['file']}::{r['test']}", "seconds": r["seconds"]} for r in slowest
        ],
    }


def markdown(summary: dict) -> str:
    outcomes = ("passed", "failed", "errored", "skipped", "xfailed")
    out = [
        "# scikit-learn's tree tests against gpu_tree",
        "",
        f"Run in {summary['seconds']} s; options: `{json.dumps(summary['options'])}`.",
        "",
        "| file | " + " | ".join(outcomes) + " |",
        "|---" * (len(outcomes) + 1) + "|",
    ]
    for file, counts in summary["per_file"].items():
        out.append(f"| {file} | " + " | ".join(str(counts.get(o, 0)) for o in outcomes) + " |")
    totals = summary["totals"]
    out.append("| **total** | " + " | ".join(str(totals.get(o, 0)) for o in outcomes) + " |")
    why = {name: reason for name, reason, _ in CATEGORIES}
    for name, failures in summary["categories"].items():
        out += ["", f"## {name} ({len(failures)})", "", why[name] + ".", ""]
        # One line per test function and error: its count and up to three parameter sets.
        same = defaultdict(list)
        for f in failures:
            function, _, params = f["test"].partition("[")
            same[(f["file"], function, f["message"])].append(params.rstrip("]"))
        for (file, function, message), params in same.items():
            shown = ", ".join(f"`[{p}]`" for p in params[:3] if p)
            more = f" (+{len(params) - 3} more)" if len(params) > 3 else ""
            count = f" x{len(params)}" if len(params) > 1 else ""
            ids = f" {shown}{more}" if shown else ""
            out.append(f"- `{file}::{function}`{count}{ids}: {message}")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="+", default=list(TEST_FILES), choices=TEST_FILES)
    parser.add_argument("--keyword", "-k", help="passed to pytest as -k")
    parser.add_argument("--out", type=Path, help="summary file: .json, else markdown")
    # The first test of a run compiles gpu_tree's numba kernels (about 100 s on 2 busy
    # cores): the limit is for hangs, not for slow tests.
    parser.add_argument("--timeout", type=int, default=300, help="seconds per test")
    parser.add_argument(
        "--sklearn-exports",
        action="store_true",
        help="keep scikit-learn's export_text/export_graphviz/plot_tree (fed gpu_tree trees)",
    )
    parser.add_argument(
        "--deselect",
        action="append",
        default=[],
        metavar="FILE::TEST",
        help="leave a test out (repeatable); a full run takes about 9 minutes on 2 cores",
    )
    args = parser.parse_args(argv)

    source_dir = sklearn_tests_dir()
    if source_dir is None:
        print("scikit-learn's tree tests are not installed with sklearn", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="sklearn_yardstick_") as tmp:
        workdir = Path(tmp)
        (workdir / "_gpu_tree_yardstick.py").write_text(shim_source())
        (workdir / "conftest.py").write_text(CONFTEST)
        rebound = {}
        for name in args.files:
            text, names = rewrite((source_dir / name).read_text(), not args.sklearn_exports)
            (workdir / name).write_text(text)
            rebound[name] = names
            if not names:  # the file would test scikit-learn's own classes: say so
                print(f"warning: {name} imports none of {ESTIMATORS}", file=sys.stderr)
        report, seconds = run_pytest(workdir, args.files, args.keyword, args.timeout, args.deselect)
        if not report.is_file():  # pytest stopped before running anything (its reason above)
            return 2
        results = read_report(report)
    options = {
        "files": args.files,
        "keyword": args.keyword,
        "timeout": args.timeout,
        "exports": "sklearn" if args.sklearn_exports else "gpu_tree",
        "deselected": args.deselect,
        "rebound": rebound,
    }
    summary = summarise(results, seconds, options)
    text = markdown(summary)
    print(text)
    # The exit status says whether the yardstick ran, not whether the tests passed: some
    # fail by design (tests/quality/YARDSTICK.md).
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1) if args.out.suffix == ".json" else text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
