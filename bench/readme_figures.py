"""Measure the figures the benchmarks page quotes and write them into it, with their provenance.

docs/benchmarks.md's timing figures (the site's benchmarks page; its charts are drawn from
them when the site is built) live between marker comments::

    <!-- figures:NAME begin -->
    ...generated: the table, then the date, commit, machine and command...
    <!-- figures:NAME end -->

This script runs, ``--runs`` times each, the benchmark that produced every block, takes the
median over the runs (each run's figure is already the median of its own fits) with the
range, rewrites the text between each block's markers (nothing outside them), and appends the
same measurement, run by run, to bench/RESULTS.md as a new dated section (earlier sections are
never touched). The blocks:

* ``cpu-1m``: ``python bench/bench_cpu.py --repeats 5 --sklearn-repeats 3`` (1,000,000 x 28
  make_classification rows, depth 10, gpu_tree against scikit-learn's tree, LightGBM,
  XGBoost and HistGradientBoosting; about 3.5 minutes a run on a 2-core machine);
* ``full-depth``: ``python bench/bench_full_depth.py --rows 200000 --repeats 3`` (fully grown
  trees, gpu_tree against scikit-learn; each tool in its own process; about 50 s a run);
* ``quick-start``: ``gputree -q bench`` with no options (the quick start's main job,
  sized for the machine; about 40 s a run on 2 cores).

Peers that are not installed are left out of the tables and named under them: install the
``bench`` extra (``pip install ".[bench]"``) for LightGBM and XGBoost first. A benchmark
that fails (``gputree bench``'s accuracy gate included) stops the script before anything is
written.

    python bench/readme_figures.py                    # the real figures, 3 runs: ~15 minutes on 2 cores
    python bench/readme_figures.py --only quick-start --runs 5
    python bench/readme_figures.py --dry-run          # measure and print, write nothing
    python bench/readme_figures.py --quick --readme /tmp/README.md --results /tmp/RESULTS.md
                                                      # tiny sizes, seconds: checks the script
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from gpu_tree.app.machine import machine_info

REPO_ROOT = Path(__file__).resolve().parent.parent
BLOCKS = ("cpu-1m", "full-depth", "quick-start")
BEGIN = "<!-- figures:{name} begin -->"
END = "<!-- figures:{name} end -->"


# -- what each block runs -----------------------------------------------------------------------
@dataclass
class Run:
    """One run of one block: per tool, its figures."""

    tools: dict = field(default_factory=dict)  # name -> {"fit_s", "ratio", "accuracy", ...}
    settings: dict = field(default_factory=dict)
    not_installed: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)


def _python(script, *args):
    return [sys.executable, str(REPO_ROOT / "bench" / script), *map(str, args)]


def _gputree():
    """The gputree entry point of this interpreter's environment."""
    here = Path(sys.executable).parent
    found = shutil.which("gputree", path=str(here)) or shutil.which("gputree")
    if found is None:
        raise SystemExit("readme_figures: gputree not found; pip install . first")
    return found


def _check_output(command, what):
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT)
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-15:]
        raise SystemExit(
            f"readme_figures: {what} failed (exit {result.returncode}): {shlex.join(command)}\n"
            + "\n".join(tail)
        )
    return result.stdout


def cpu_1m_command(quick: bool, json_path) -> list:
    if quick:
        args = [
            "--rows",
            3000,
            "--depth",
            4,
            "--repeats",
            1,
            "--sklearn-repeats",
            1,
            "--predict-repeats",
            1,
            "--warmup-rows",
            500,
            "--skip",
            "hist_gb",
        ]
    else:
        args = ["--repeats", 5, "--sklearn-repeats", 3]
    return _python("bench_cpu.py", *args, "--json", json_path)


def run_cpu_1m(quick: bool, scratch: Path) -> Run:
    out = scratch / "cpu.json"
    _check_output(cpu_1m_command(quick, out), "bench_cpu.py")
    report = json.loads(out.read_text())
    run = Run(
        settings={
            **report["data"],
            **{k: report["args"][k] for k in ("depth", "bins", "features")},
            "repeats": report["args"]["repeats"],
            "sklearn_repeats": report["args"]["sklearn_repeats"],
        }
    )
    for result in report["results"]:
        if result["status"] == "not installed":
            run.not_installed.append(result["label"])
        elif result["status"] == "ok":
            run.tools[result["label"]] = {
                "fit_s": result["fit_median_seconds"],
                "ratio": result["fit_time_ratio_vs_gpu_tree"],
                "accuracy": result["accuracy_percent"] / 100,
                "leaves": result["n_leaves"],
            }
        elif result["status"] != "skipped":
            raise SystemExit(f"readme_figures: bench_cpu.py: {result['label']}: {result['status']}")
    return run


def full_depth_commands(quick: bool) -> list:
    rows, repeats = (2000, 1) if quick else (200_000, 3)
    return [
        _python("bench_full_depth.py", "--child", tool, "--rows", rows, "--repeats", repeats)
        for tool in ("gpu_tree", "sklearn")
    ]


def run_full_depth(quick: bool, scratch: Path) -> Run:
    # bench_full_depth.py runs each tool in a child process of its own (its own peak
    # memory); the children are called here directly, as the script itself calls them.
    run = Run()
    for command, label in zip(
        full_depth_commands(quick),
        ("gpu_tree", "scikit-learn DecisionTreeClassifier"),
        strict=True,
    ):
        child = json.loads(_check_output(command, "bench_full_depth.py").strip().splitlines()[-1])
        run.tools[label] = {
            "fit_s": child["fit_s"],
            "accuracy": child["accuracy"],
            "leaves": child["leaves"],
            "depth": child["depth"],
            "peak_mb": child["peak_rss_mb"],
        }
        run.settings = {"rows": int(command[command.index("--rows") + 1])}
        run.settings["train_rows"] = int(0.8 * run.settings["rows"])
    ours = run.tools["gpu_tree"]["fit_s"]
    for figures in run.tools.values():
        figures["ratio"] = figures["fit_s"] / ours
    return run


def quick_start_command(quick: bool, json_path) -> list:
    args = ["--rows", 2000, "--depth", 4, "--repeats", 1] if quick else []
    return [_gputree(), "-q", "bench", *map(str, args), "--json", str(json_path)]


def run_quick_start(quick: bool, scratch: Path) -> Run:
    out = scratch / "quick.json"
    _check_output(quick_start_command(quick, out), "gputree bench")
    report = json.loads(out.read_text())
    run = Run(
        settings=report["settings"],
        not_installed=report["not_installed"],
        extra={"gate": report.get("gate")},
    )
    for result in report["results"]:
        if result["status"] == "ok":
            run.tools[result["name"]] = {
                "fit_s": result["fit_s"],
                "ratio": result["fit_ratio"],
                "predict_ratio": result["predict_ratio"],
                "accuracy": result["accuracy"],
            }
        else:
            raise SystemExit(f"readme_figures: gputree bench: {result['name']}: {result['error']}")
    return run


RUNNERS = {"cpu-1m": run_cpu_1m, "full-depth": run_full_depth, "quick-start": run_quick_start}


def block_command(name: str, quick: bool) -> str:
    """The command a block's figures come from, as a reader would type it."""

    def shown(command):
        words = [
            os.path.relpath(w, REPO_ROOT) if w.startswith(str(REPO_ROOT)) else w
            for w in command[1:]
        ]
        return shlex.join(words[: words.index("--json")] if "--json" in words else words)

    if name == "cpu-1m":
        return "python " + shown(cpu_1m_command(quick, "x"))
    if name == "full-depth":
        rows, repeats = (2000, 1) if quick else (200_000, 3)
        return f"python bench/bench_full_depth.py --rows {rows} --repeats {repeats}"
    return "gputree " + shown(quick_start_command(quick, "x"))


# -- provenance ---------------------------------------------------------------------------------
def _git(*args) -> str:
    try:
        result = subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO_ROOT)
    except OSError:
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""


def provenance() -> dict:
    machine = machine_info()
    versions = {"Python": machine["versions"].pop("python"), **machine["versions"]}
    commit = _git("rev-parse", "--short=12", "HEAD") or "unknown"
    modified = bool(_git("status", "--porcelain", "--untracked-files=no"))
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "modified": modified,
        "cores": machine["cpus"],
        "usable_cores": machine["usable_cores"],
        "cpu_model": machine["cpu_model"],
        "memory_bytes": machine["memory_bytes"],
        "platform": machine["platform"],
        "versions": versions,
        "load_average": machine["load_average_at_start"],
    }


def stamp(info: dict, command: str, runs: int) -> str:
    memory = (
        f"{info['memory_bytes'] / 2**30:.1f} GiB memory"
        if info["memory_bytes"]
        else "memory unknown"
    )
    cores = f"{info['cores']} cores"
    if info["usable_cores"] is not None and info["usable_cores"] != info["cores"]:
        cores += f" ({info['usable_cores']} usable)"
    commit = f"commit `{info['commit']}`" + (
        " with uncommitted changes" if info["modified"] else ""
    )
    return _paragraph(
        f"*Measured {info['date']} at {commit} on {cores}, {info['cpu_model']}, {memory}: "
        f"median of {runs} run(s) of `{command}` (range over the runs in parentheses); written by "
        f"`bench/readme_figures.py`, history in `bench/RESULTS.md`.*"
    )


# -- medians and tables -------------------------------------------------------------------------
def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _ratio(value) -> str:
    """53×, 2.3×, 1.15×, 0.84×: whole numbers from 10 on, else two decimals at most."""
    if value is None:
        return "n/a"
    text = f"{value:.0f}" if value >= 10 else f"{value:.2f}".rstrip("0").rstrip(".")
    return text + "×"


def _spread(values, fmt) -> str:
    """' (0.82–0.89 s)': the range over the runs, the unit once; '' for a single run."""
    values = [v for v in values if v is not None]
    if len(values) < 2:
        return ""
    low, high = fmt(min(values)), fmt(max(values))
    unit = next((u for u in (" s", "×") if low.endswith(u) and high.endswith(u)), "")
    return f" ({low.removesuffix(unit)}–{high})"


def _paragraph(text: str) -> str:
    return textwrap.fill(text, width=90, break_long_words=False, break_on_hyphens=False)


def summarise(runs: list) -> dict:
    """Per tool (in the first run's order, tools of every run): medians and ranges."""
    names = [n for n in runs[0].tools if all(n in r.tools for r in runs)]
    summary = {}
    for name in names:
        keys = runs[0].tools[name].keys()
        summary[name] = {key: [r.tools[name][key] for r in runs] for key in keys}
    return summary


def _seconds(value) -> str:
    return "n/a" if value is None else f"{value:.3g} s" if value < 10 else f"{value:.1f} s"


def _accuracy(value) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}%"


def _missing_line(runs) -> str:
    missing = sorted({m for r in runs for m in r.not_installed})
    if not missing:
        return ""
    return (
        _paragraph(f"Not installed for this measurement (left out): {', '.join(missing)}.") + "\n\n"
    )


def render_cpu_1m(runs, info, command) -> str:
    s = runs[0].settings
    summary = summarise(runs)
    lines = [
        f"One depth-{s['depth']} tree on {s['n_train'] + s['n_test']:,} × {s['features']} "
        f"rows ({s['n_train']:,} for training), {s['bins']} bins, `make_classification` data, "
        f"fit time against the peers in the same run (each run the median of {s['repeats']} "
        f"fit(s), {s['sklearn_repeats']} for scikit-learn's exact tree; > 1×: gpu_tree faster):",
        "",
        "| | fit time relative to gpu_tree | test accuracy |",
        "|---|---:|---:|",
    ]
    for name, figures in summary.items():
        if name.startswith("gpu_tree"):
            fit = _median(figures["fit_s"])
            label = f"{name}: {_seconds(fit)}{_spread(figures['fit_s'], _seconds)}"
            ratio = "1×"
        else:
            label = name
            ratio = _ratio(_median(figures["ratio"])) + _spread(figures["ratio"], _ratio)
        lines.append(f"| {label} | {ratio} | {_accuracy(_median(figures['accuracy']))} |")
    lines[0] = _paragraph(lines[0])
    return "\n".join(lines) + "\n\n" + _missing_line(runs) + stamp(info, command, len(runs)) + "\n"


def render_full_depth(runs, info, command) -> str:
    s = runs[0].settings
    summary = summarise(runs)
    lines = [
        f"Fully grown trees (`max_depth=None`) on {s['train_rows']:,} training rows of the "
        "Higgs-shaped set (each tool in its own process; > 1×: gpu_tree faster):",
        "",
        "| | fit time | relative to gpu_tree | leaves | depth | test accuracy | peak memory |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, f in summary.items():
        ratio = (
            "1×"
            if name == "gpu_tree"
            else _ratio(_median(f["ratio"])) + _spread(f["ratio"], _ratio)
        )
        lines.append(
            f"| {name} | {_seconds(_median(f['fit_s']))}{_spread(f['fit_s'], _seconds)} | {ratio} "
            f"| {_median(f['leaves']):,.0f} | {_median(f['depth']):.0f} "
            f"| {_accuracy(_median(f['accuracy']))} | {_median(f['peak_mb']):,.0f} MB |"
        )
    lines[0] = _paragraph(lines[0])
    return "\n".join(lines) + "\n\n" + stamp(info, command, len(runs)) + "\n"


def render_quick_start(runs, info, command) -> str:
    s = runs[0].settings
    summary = summarise(runs)
    lines = [
        f"The quick start's `gputree bench` ({s['train_rows']:,} training and "
        f"{s['test_rows']:,} test rows × {s['features']}, depth {s['depth']}, {s['bins']} "
        f"bins, on {s['device']}; rows: {s['rows_rule']}; ratios are peer time / gpu_tree "
        "time, > 1×: gpu_tree faster):",
        "",
        "| model | fit time | fit ratio | predict ratio | test accuracy |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, f in summary.items():
        if name == "gpu_tree":
            ratios = "1× | 1×"
        else:
            ratios = (
                f"{_ratio(_median(f['ratio']))}{_spread(f['ratio'], _ratio)} "
                f"| {_ratio(_median(f['predict_ratio']))}"
            )
        lines.append(
            f"| {name} | {_seconds(_median(f['fit_s']))}{_spread(f['fit_s'], _seconds)} | {ratios} "
            f"| {_accuracy(_median(f['accuracy']))} |"
        )
    gates = [r.extra.get("gate") or {} for r in runs]
    verdicts = sorted({g.get("status", "n/a") for g in gates})
    gate = (
        f"Accuracy gate: {', '.join(verdicts)} in every run"
        if len(verdicts) == 1
        else f"Accuracy gate verdicts: {', '.join(verdicts)}"
    )
    if gates and gates[0].get("reason"):
        gate += f" (first run: {gates[0]['reason']})"
    lines[0] = _paragraph(lines[0])
    return (
        "\n".join(lines)
        + "\n\n"
        + _paragraph(gate + ".")
        + "\n\n"
        + _missing_line(runs)
        + stamp(info, command, len(runs))
        + "\n"
    )


RENDERERS = {
    "cpu-1m": render_cpu_1m,
    "full-depth": render_full_depth,
    "quick-start": render_quick_start,
}


def render_history(blocks: dict, info: dict, argv: list) -> str:
    """The RESULTS.md section: provenance, then each block's table and its runs one by one."""
    memory = f"{info['memory_bytes'] / 2**30:.1f} GiB" if info["memory_bytes"] else "unknown"
    versions = ", ".join(f"{k} {v}" for k, v in info["versions"].items())
    lines = [
        "",
        f"## {info['date'][:10]} · README figures (`bench/readme_figures.py`) · "
        f"{info['cores']}-core {info['cpu_model']}",
        "",
        f"Command: `{shlex.join(['python', 'bench/readme_figures.py', *argv])}`, {info['date']}, "
        f"commit `{info['commit']}`{' with uncommitted changes' if info['modified'] else ''}.",
        f"Machine: {info['platform']}; {info['cpu_model']}; {info['cores']} cores "
        f"({info['usable_cores']} usable); {memory} memory; load average at start "
        f"{info['load_average']}, at end {info.get('load_average_end')}.",
        f"Versions: {versions}.",
        "",
    ]
    for name, (text, runs, command) in blocks.items():
        lines += [
            f"### {name}: `{command}`",
            "",
            text.rstrip("\n"),
            "",
            "Run by run (fit s; ratio peer / gpu_tree; accuracy):",
            "",
        ]
        tools = list(runs[0].tools)
        lines.append("| run | " + " | ".join(tools) + " |")
        lines.append("|---:|" + "---|" * len(tools))
        for k, run in enumerate(runs, 1):
            cells = []
            for tool in tools:
                f = run.tools.get(tool)
                cells.append(
                    "n/a"
                    if f is None
                    else f"{_seconds(f['fit_s'])}, {_ratio(f.get('ratio'))}, {_accuracy(f['accuracy'])}"
                )
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


# -- README markers -----------------------------------------------------------------------------
def _marker_pattern(name: str):
    return re.compile(
        "("
        + re.escape(BEGIN.format(name=name))
        + r"\n)(.*?)(^"
        + re.escape(END.format(name=name))
        + ")",
        flags=re.S | re.M,
    )


def check_markers(text: str, names) -> None:
    for name in names:
        found = len(_marker_pattern(name).findall(text))
        if found != 1:
            raise SystemExit(
                f"readme_figures: the page must hold the markers {BEGIN.format(name=name)} ... "
                f"{END.format(name=name)} exactly once (each on a line of its own), found {found}"
            )


def replace_blocks(text: str, contents: dict) -> str:
    """``text`` with the lines between each block's markers replaced; the rest untouched."""
    check_markers(text, contents)
    for name, content in contents.items():
        text = _marker_pattern(name).sub(lambda m, c=content: m.group(1) + c + m.group(3), text)
    return text


def _write_atomically(path: Path, text: str) -> None:
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, delete=False, encoding="utf-8", prefix=f".{path.name}.", suffix=".tmp"
    ) as temporary:
        temporary.write(text)
    shutil.copymode(path, temporary.name)
    os.replace(temporary.name, path)


# -- main ---------------------------------------------------------------------------------------
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each benchmark (median)")
    parser.add_argument(
        "--only", default=",".join(BLOCKS), help=f"comma list of {', '.join(BLOCKS)}"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes (seconds), to check the script; needs --readme and "
        "--results (copies) or --dry-run",
    )
    parser.add_argument("--dry-run", action="store_true", help="measure and print; write nothing")
    parser.add_argument(
        "--page",
        "--readme",
        dest="readme",
        type=Path,
        default=None,
        help="the page to write: default docs/benchmarks.md",
    )
    parser.add_argument("--results", type=Path, default=None, help="default: bench/RESULTS.md")
    args = parser.parse_args(argv)
    args.only = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = set(args.only) - set(BLOCKS)
    if unknown or not args.only:
        parser.error(f"--only takes {', '.join(BLOCKS)}; got {sorted(unknown) or 'nothing'}")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.quick and not args.dry_run and (args.readme is None or args.results is None):
        parser.error(
            "--quick measures tiny sizes: give --readme and --results (copies), or --dry-run"
        )
    args.readme = args.readme or REPO_ROOT / "docs" / "benchmarks.md"
    args.results = args.results or REPO_ROOT / "bench" / "RESULTS.md"
    return args


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    readme = args.readme.read_text(encoding="utf-8")
    check_markers(readme, args.only)  # before minutes of measuring
    if not args.dry_run:
        args.results.read_text(encoding="utf-8")  # exists and is readable
    info = provenance()
    blocks = {}
    with tempfile.TemporaryDirectory(prefix="readme_figures.") as scratch:
        for name in args.only:
            command = block_command(name, args.quick)
            runs = []
            for k in range(args.runs):
                print(f"{name}: run {k + 1} of {args.runs}: {command}", file=sys.stderr, flush=True)
                runs.append(RUNNERS[name](args.quick, Path(scratch)))
            blocks[name] = (RENDERERS[name](runs, info, command), runs, command)
    info["load_average_end"] = (
        [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    )
    contents = {name: text for name, (text, _, _) in blocks.items()}
    for name, text in contents.items():
        print(f"{BEGIN.format(name=name)}\n{text}{END.format(name=name)}\n")
    history = render_history(blocks, info, argv)
    if args.dry_run:
        print("--dry-run: nothing written", file=sys.stderr)
        return 0
    _write_atomically(args.readme, replace_blocks(readme, contents))
    # Appended, never rewritten: earlier sections stay as they are.
    ends_cleanly = args.results.read_text(encoding="utf-8").endswith("\n")
    with open(args.results, "a", encoding="utf-8") as results:
        results.write(history if ends_cleanly else "\n" + history)
    print(
        f"wrote {', '.join(contents)} into {args.readme}; appended to {args.results}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
