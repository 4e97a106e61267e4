"""Model-file fuzzer: damaged model files are refused, never crash, hang or mislead.

Fits a few real models (classifier, regressor, categorical subsets, multiway, an oblique
classifier), saves them, and makes ``--cases`` damaged copies, one random edit each: a
number of a tree array replaced by a hostile value (0, -1, huge or out-of-range integers,
NaN, infinities, strings, lists, booleans), a field deleted, an array truncated or
lengthened, a top-level field replaced; and, in a classifier's file, its class labels'
dtype string (structured, bytes, complex, void, datetime, str of huge or too short a
length...), one of its labels (out of its dtype's range, of another type, a repeat), or
one node's class fractions (all 0, scaled, nudged off a sum of 1). Half the copies have
their tree's arrays packed again after the edit, as saved files hold them, and one in
five of those a packed array damaged (its count, its dtype, a base64 character, or its
text cut short). A child process loads
each copy and, when the loader accepts it, predicts, walks and exports with it. Every
case ends as:

- ``refused``: the loader raised ValueError (the one error a damaged file may give);
- ``worked``: loaded, and predict, predict_proba, apply, decision_path, export_text and
  feature_importances_ ran, with finite outputs (and probabilities in [0, 1], each row's
  summing to 1); importances may refuse, with their documented ValueError, a regressor
  whose impurities lie beyond float64's range (+inf, or 0 at a split node);
- ``defect``: anything else: another exception, a crash (the child died), a hang
  (``--timeout`` per case), a load that took more than ``LOAD_MEMORY_MB`` of memory (the
  child's data is capped at ``--memory-limit``, so a huge allocation fails as a
  MemoryError instead of taking the machine), or non-finite predictions from a file the
  loader accepted.

The child reports each case before running it, so a crash or hang names its case; the
parent then starts a new child at the next case. Output: the counts, and each defect
with its edit. Exit status 1 when there is a defect.

    python tests/quality/fuzz_model_files.py --cases 20000 --seed 1      # the long run
    python tests/quality/fuzz_model_files.py --cases 200                 # what CI runs (a test)
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import queue
import random
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

HOSTILE = [
    0,
    -1,
    -2,
    1,
    2**31,
    2**63,
    -(2**63) - 1,
    10**12,
    10**400,
    0.5,
    -0.5,
    1e308,
    "NaN",
    "inf",
    "-inf",
    "x",
    "",
    None,
    True,
    [],
    [0],
    {},
]
# Class label dtype strings: what a fit makes (bool, integers, floats, str, datetime with
# a unit, "object") beside what it never makes, or makes too short or huge ("<U200000000"
# in a 9 KB file asked for 2.4 GB, issue 43).
HOSTILE_DTYPES = [
    "<U200000000",
    "<U500000000",
    "<U1",
    "<U0",
    "U",
    "<M8[ns]",
    "<m8[ns]",
    "M8",
    "i8,i8",
    "(1000000000,)i8",
    "|V8",
    "|S3",
    "<c16",
    "O",
    "object",
    "|b1",
    "<f2",
    "<f4",
    ">i8",
    "|i1",
    "<u8",
    "float128",
    "xyz",
    "",
    "<U" + "9" * 30,
]
# Class labels beyond their dtype: past int64 and float64, fractions, other types.
HOSTILE_LABELS = [2**70, -(2**70), 2**64, 1e308, -1e308, 0.5, 2049.0, "no", "a" * 40, None]
# Edits of one node's class fractions (a classifier's value row).
FRACTION_EDITS = {
    "all 0": lambda row: [0.0] * len(row),
    "halved": lambda row: [v / 2 for v in row],
    "doubled": lambda row: [v * 2 for v in row],
    "first + 1e-6": lambda row: [row[0] + 1e-6, *row[1:]],
    "first - 1e-6": lambda row: [row[0] - 1e-6, *row[1:]],
}
# Memory a load may take (peak resident growth, MB): a model file of a few KB needs little.
LOAD_MEMORY_MB = 256


def fitted_documents() -> dict[str, dict]:
    """Model documents of small real fits, one per kind of node."""
    import numpy as np

    import gpu_tree
    from gpu_tree.model.file_format.writing import unpacked_document

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    X[rng.random(300) < 0.1, 1] = np.nan
    X[:, 3] = rng.integers(0, 6, size=300)
    y = (X[:, 0] + (X[:, 3] % 2) > 0.3).astype(int) + (X[:, 2] > 1)
    models = {
        "classifier": gpu_tree.DecisionTreeClassifier(max_depth=4, device="cpu").fit(X, y),
        "regressor": gpu_tree.DecisionTreeRegressor(max_depth=4, device="cpu").fit(
            X, X[:, 0] * 3 + rng.normal(size=300)
        ),
        "subset": gpu_tree.DecisionTreeClassifier(
            max_depth=4, device="cpu", categorical_features=[3]
        ).fit(X, y),
        "multiway": gpu_tree.DecisionTreeClassifier(
            max_depth=3, device="cpu", categorical_features=[3], categorical_split="multiway"
        ).fit(X, y),
        "oblique": gpu_tree.ObliqueDecisionTreeClassifier(max_depth=3, device="cpu").fit(
            np.nan_to_num(X), y
        ),
    }
    documents = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, model in models.items():
            path = Path(folder) / f"{name}.json"
            model.save(path)
            # edited as lists; make_cases packs the arrays again as files hold them
            documents[name] = unpacked_document(json.loads(path.read_text()))
    return documents


def packed_again(doc: dict, rng: random.Random) -> tuple[dict, str]:
    """``doc`` with its tree's arrays packed, as saved files hold them, where they still
    hold numbers of one kind; a packed array damaged, one time in five; and what was done."""
    from gpu_tree.model import packed_arrays

    tree = doc.get(_tree_key(doc))
    if not isinstance(tree, dict):
        return doc, ""
    for name, values in tree.items():
        if not isinstance(values, list) or not values:
            continue
        kinds = set(map(type, values))
        if kinds == {int} and all(-(2**63) <= v < 2**63 for v in values):
            tree[name] = packed_arrays.pack_integers(values)
        elif kinds <= {int, float} and float in kinds and all(abs(v) < 2**63 for v in values):
            tree[name] = packed_arrays.pack_floats(values)
    packed = [name for name, v in tree.items() if packed_arrays.is_packed(v)]
    if not packed or rng.random() >= 0.2:
        return doc, ", arrays packed"
    name = rng.choice(packed)
    array = tree[name]
    edit = rng.choice(["count", "dtype", "byte", "cut"])
    if edit == "count":
        array["count"] = rng.choice(HOSTILE + [array["count"] + 1, array["count"] - 1])
    elif edit == "dtype":
        array["dtype"] = rng.choice(["<f8", "|i1", "<i8", ">i4", "<f4", "|u1", "O", 0])
    else:  # one base64 character replaced, or the text cut there
        text = array["zlib_base64"]
        k = rng.randrange(len(text))
        tail = rng.choice("AZaz09+/=") + text[k + 1 :] if edit == "byte" else ""
        array["zlib_base64"] = text[:k] + tail
    return doc, f", arrays packed, tree.{name} packed with its {edit} damaged"


def _tree_key(doc: dict) -> str:
    return "tree" if "tree" in doc else "oblique_tree"


def damage_labels(doc: dict, rng: random.Random) -> tuple[dict, str]:
    """One random edit of a classifier's class labels or of one node's class fractions
    (``doc`` is a copy, edited in place)."""
    classes, tree = doc["classes"], doc[_tree_key(doc)]
    kind = rng.random()
    if kind < 0.35:
        classes["dtype"] = rng.choice(HOSTILE_DTYPES)
        return doc, f"classes.dtype = {classes['dtype']!r}"
    if kind < 0.7:
        index = rng.randrange(len(classes["values"]))
        value = rng.choice(HOSTILE_LABELS + HOSTILE + [classes["values"][index - 1]])
        classes["values"][index] = value
        return doc, f"classes.values[{index}] = {value!r:.60}"
    width = len(tree["value"]) // tree["node_count"]  # classes (one output)
    node = rng.randrange(tree["node_count"])
    name = rng.choice(sorted(FRACTION_EDITS))
    row = tree["value"][node * width : (node + 1) * width]
    tree["value"][node * width : (node + 1) * width] = FRACTION_EDITS[name](row)
    return doc, f"class fractions of node {node}: {name}"


def damage(document: dict, rng: random.Random) -> tuple[dict, str]:
    """One random edit of a copy of ``document``, and a description of it."""
    doc = copy.deepcopy(document)
    if isinstance(doc.get("classes"), dict) and rng.random() < 0.25:
        return damage_labels(doc, rng)
    tree = doc[_tree_key(doc)]
    arrays = [k for k, v in tree.items() if isinstance(v, list)]
    kind = rng.random()
    if kind < 0.6:  # one entry of a tree array
        name = rng.choice([a for a in arrays if tree[a]] or arrays)
        if not tree[name]:
            tree[name].append(rng.choice(HOSTILE))
            return doc, f"tree.{name} += [{tree[name][-1]!r}]"
        index = rng.randrange(len(tree[name]))
        value = rng.choice(HOSTILE + [tree[name][index] + rng.choice([-1, 1])])
        if isinstance(tree[name][index], bool) or not isinstance(tree[name][index], (int, float)):
            value = rng.choice(HOSTILE)
        tree[name][index] = value
        return doc, f"tree.{name}[{index}] = {value!r}"
    if kind < 0.7:  # a tree scalar
        name = rng.choice([k for k, v in tree.items() if not isinstance(v, list)])
        tree[name] = rng.choice(HOSTILE + [tree[name] + 1, tree[name] - 1])
        return doc, f"tree.{name} = {tree[name]!r}"
    if kind < 0.8:  # an array truncated or lengthened
        name = rng.choice(arrays)
        if tree[name] and rng.random() < 0.5:
            tree[name].pop()
            return doc, f"tree.{name} truncated"
        tree[name].append(tree[name][-1] if tree[name] else 0)
        return doc, f"tree.{name} lengthened"
    if kind < 0.9:  # a field deleted
        name = rng.choice(list(tree) + list(doc))
        (tree if name in tree else doc).pop(name)
        return doc, f"{name} deleted"
    name = rng.choice([k for k in doc if k != _tree_key(doc)])  # a top-level field replaced
    doc[name] = rng.choice(HOSTILE)
    return doc, f"{name} = {doc[name]!r}"


# The child: loads each case, uses what loads, prints one line per case.
_CHILD = r"""
import json, os, resource, sys, warnings
import numpy as np
import gpu_tree
warnings.simplefilter("ignore")
limit = int(os.environ.get("FUZZ_MEMORY_LIMIT", "0"))
if limit:  # a huge allocation fails here (MemoryError: a defect), not on the machine
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
    if hard == resource.RLIM_INFINITY or hard > limit:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
load_kb = int(os.environ.get("FUZZ_LOAD_MEMORY_MB", "256")) * 1024
paths = json.loads(sys.stdin.read())
rng = np.random.default_rng(0)
for i, path in enumerate(paths):
    print(f"start {i}", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KB (Linux)
    try:
        model = gpu_tree.load(path)
    except ValueError:
        model = None
    except BaseException as exc:
        print(f"defect {i} load raised {type(exc).__name__}: {str(exc)[:200]}", flush=True)
        continue
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
    if grown > load_kb:
        print(f"defect {i} load took {grown // 1024} MB of memory", flush=True)
        continue
    if model is None:
        print(f"refused {i}", flush=True)
        continue
    try:
        X = rng.normal(size=(50, model.n_features_in_))
        if not type(model).__name__.startswith("Oblique"):  # oblique trees refuse NaN
            X[::7, 0] = np.nan
        categorical = getattr(model, "_category_maps", None)
        for f in (getattr(categorical, "features", []) if categorical is not None else []):
            X[:, f] = rng.integers(-1, 8, size=50)
        prediction = np.asarray(model.predict(X))
        problem = None
        if prediction.dtype.kind == "f" and not np.all(np.isfinite(prediction)):
            problem = "non-finite predictions"
        if hasattr(model, "predict_proba"):
            proba = model.predict_proba(X)
            if not (np.all(np.isfinite(proba)) and np.all((proba >= 0) & (proba <= 1))):
                problem = "probabilities outside [0, 1]"
            elif not np.allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-6):
                problem = "probabilities that do not sum to 1"
        model.apply(X)
        model.decision_path(X)
        gpu_tree.export_text(model)
        try:
            importances = np.zeros(1)  # oblique trees have none
            if hasattr(type(model), "feature_importances_"):
                importances = model.feature_importances_
        except ValueError as exc:  # documented: impurities beyond float64 (+inf, or 0 split)
            if "impurity lies beyond float64's range" not in str(exc):
                raise
            importances = np.zeros(model.n_features_in_)
        if not np.all(np.isfinite(importances)):
            problem = "non-finite importances"
        print(f"defect {i} {problem}" if problem else f"worked {i}", flush=True)
    except BaseException as exc:
        print(f"defect {i} use raised {type(exc).__name__}: {str(exc)[:200]}", flush=True)
"""


def make_cases(n_cases: int, seed: int, folder: Path) -> list[tuple[str, str]]:
    """(path, description) of ``n_cases`` damaged model files written into ``folder``."""
    rng = random.Random(seed)
    documents = fitted_documents()
    names = sorted(documents)
    cases = []
    for i in range(n_cases):
        doc, edit = damage(documents[names[i % len(names)]], rng)
        if rng.random() < 0.5:
            doc, packing = packed_again(doc, rng)
            edit += packing
        path = folder / f"case{i}.json"
        path.write_text(json.dumps(doc))
        cases.append((str(path), f"{names[i % len(names)]}: {edit}"))
    return cases


def _forward_lines(stream, lines: queue.Queue) -> None:
    """Put each line of ``stream`` into ``lines``, then "" at its end."""
    for line in stream:
        lines.put(line)
    lines.put("")


def run(
    cases, timeout: float, child_code: str = _CHILD, memory_limit: int | None = 3 << 30
) -> dict:
    """Run every case in child processes (``child_code`` reads the paths as JSON on stdin
    and prints ``start i`` then ``refused i``, ``worked i`` or ``defect i ...`` per case);
    a child that dies or hangs makes a defect of its case, and a new child goes on.
    ``memory_limit`` (bytes, None: none): the children's data limit (RLIMIT_DATA)."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "FUZZ_LOAD_MEMORY_MB": str(LOAD_MEMORY_MB)}
    if memory_limit:
        env["FUZZ_MEMORY_LIMIT"] = str(int(memory_limit))
    n_cases = len(cases)
    counts = {"tried": n_cases, "refused": 0, "worked": 0, "defects": 0}
    defects = []
    start = 0
    while start < n_cases:
        batch = [path for path, _ in cases[start:]]
        child = subprocess.Popen(
            [sys.executable, "-c", child_code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        child.stdin.write(json.dumps(batch))
        child.stdin.close()
        lines = queue.Queue()  # the child's lines, read by a thread: get() can time out
        reader = threading.Thread(target=_forward_lines, args=(child.stdout, lines), daemon=True)
        reader.start()
        current, finished = None, False
        while True:
            # The first case also waits for the child's import.
            wait = timeout + (60 if current in (None, 0) else 0)
            try:
                line = lines.get(timeout=wait)
            except queue.Empty:
                child.kill()  # a hang: only the child this run started
                child.wait()
                break
            if not line:
                child.wait()
                finished = current is None or current == len(batch) - 1
                break
            word, index, *rest = line.split(" ", 2)
            index = int(index)
            if word == "start":
                current = index
                continue
            counts[word if word in ("refused", "worked") else "defects"] += 1
            if word == "defect":
                defects.append((start + index, cases[start + index][1], rest[0].strip()))
            if index == len(batch) - 1:
                finished = True
        reader.join(timeout=5)
        if finished:
            break
        # The child died or hung in case ``current``: a defect; go on after it.
        failed = start + (current or 0)
        death = "hang" if child.returncode in (-9, None) else f"crash (exit {child.returncode})"
        counts["defects"] += 1
        defects.append((failed, cases[failed][1], death))
        start = failed + 1
    return {"counts": counts, "defects": defects}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per case")
    parser.add_argument(
        "--memory-limit", type=float, default=3.0, help="GiB of data per child (0: no limit)"
    )
    parser.add_argument("--json", help="write the counts and defects here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        result = run(
            make_cases(args.cases, args.seed, Path(folder)),
            args.timeout,
            memory_limit=int(args.memory_limit * (1 << 30)) or None,
        )
    counts = result["counts"]
    print(", ".join(f"{k} {v}" for k, v in counts.items()))
    for index, edit, outcome in result["defects"]:
        print(f"defect in case {index} ({edit}): {outcome}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 1 if counts["defects"] else 0


if __name__ == "__main__":
    sys.exit(main())
