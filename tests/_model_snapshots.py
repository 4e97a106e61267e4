"""Models trained on the shared datasets, saved so that a refactoring can prove it grows
the same trees: ``python tests/_model_snapshots.py`` (from the repository root) writes
them to tests/fixtures/model_snapshots/; tests/integration/test_model_snapshots.py trains
them again and compares the documents field by field (everything but the library version).

Training goes through the command line (reading, type inference, categories, missing
values, binning, growing, pruning, saving) and, for the exact splitter, which the command
line does not offer, through the estimators on arrays.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

SNAPSHOTS = Path(__file__).resolve().parent / "fixtures" / "model_snapshots"

# name -> (dataset, gputree train options)
CLI_MODELS = {
    "letter_gini": ("letter.arff", ["-t", "class", "--max-depth", "8"]),
    "letter_gain_ratio": (
        "letter.arff",
        ["-t", "class", "--criterion", "gain_ratio", "--max-depth", "6"],
    ),
    "letter_best_first": (
        "letter.arff",
        ["-t", "class", "--criterion", "entropy", "--max-leaf-nodes", "60", "--max-bins", "32"],
    ),
    "mushroom_multiway": (
        "mushroom.arff",
        ["-t", "class", "--criterion", "entropy", "--categorical-split", "multiway"],
    ),
    "nursery_subsets": (
        "nursery.arff",
        ["-t", "class", "--criterion", "entropy", "--max-depth", "7"],
    ),
    "car_multiway_gain_ratio": (
        "car_evaluation.arff",
        ["-t", "class", "--criterion", "gain_ratio", "--categorical-split", "multiway"],
    ),
    "tennis_id3": (
        "play_tennis_weather_nominal.arff",
        ["-t", "play", "--criterion", "entropy", "--categorical-split", "multiway"],
    ),
    "adult_pruned": (
        "adult_train.csv",
        [
            "-t",
            "ltgt50k",
            "-c",
            "workclass,education,marital_status,occupation,relationship,race,sex,native_country",
            "--max-depth",
            "10",
            "--ccp-alpha",
            "0.0002",
            "--min-samples-leaf",
            "5",
        ],
    ),
    "titanic_misclassification": (
        "titanic_raw.csv",
        [
            "-t",
            "survived",
            "--ignore",
            "name,ticket,cabin",
            "-c",
            "sex,embarked",
            "--criterion",
            "misclassification",
            "--max-depth",
            "6",
        ],
    ),
    "hypothyroid_cart": (
        "hypothyroid.arff",
        ["-t", "Class", "--criterion", "cart", "--max-depth", "8"],
    ),
    "higgs_entropy": (
        "higgs_subset_lightgbm_train.tsv",
        [
            "--no-header",
            "-t",
            "0",
            "--criterion",
            "entropy",
            "--max-depth",
            "8",
            "--task",
            "classification",
        ],
    ),
    "cal_housing_regression": ("cal_housing.arff", ["-t", "medianHouseValue", "--max-depth", "8"]),
    "abalone_regression": (
        "abalone.arff",
        ["-t", "Class_Rings", "--task", "regression", "--max-leaf-nodes", "40"],
    ),
    "diamonds_regression": (
        "diamonds.csv",
        ["-t", "price", "-c", "cut,color,clarity", "--max-depth", "9", "--min-samples-split", "20"],
    ),
}

# name -> (dataset, target, estimator keyword arguments): numeric ARFF files, exact splits
EXACT_MODELS = {
    "letter_exact_entropy": ("letter.arff", "class", {"criterion": "entropy", "max_depth": 6}),
    "cal_housing_exact": ("cal_housing.arff", "medianHouseValue", {"max_depth": 6}),
}


def comparable(document: dict) -> dict:
    """A model document without what may change when the code moves (its version, the
    file format's version) and with its arrays as lists, however the file stores them."""
    from gpu_tree.model.file_format.writing import unpacked_document

    plain = unpacked_document(document)
    return {k: v for k, v in plain.items() if k not in ("library_version", "format_version")}


def train_cli(name: str, workdir: Path) -> dict:
    from _cli import run_cli
    from _shared_data import dataset_path

    dataset, options = CLI_MODELS[name]
    output = workdir / f"{name}.json"
    result = run_cli("train", dataset_path(dataset), *options, "--device", "cpu", "-o", output)
    assert result.exit_code == 0, result.output
    return comparable(json.loads(output.read_text()))


def train_exact(name: str) -> dict:
    import numpy as np
    from _shared_data import numeric_arff

    from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor
    from gpu_tree.model.file_format.writing import model_document

    dataset, target, params = EXACT_MODELS[name]
    X, y = numeric_arff(dataset, target)
    if params.get("criterion", "squared_error") == "squared_error":
        model = DecisionTreeRegressor(splitter="exact", device="cpu", **params).fit(
            X, y.astype(np.float64)
        )
    else:
        model = DecisionTreeClassifier(splitter="exact", device="cpu", **params).fit(X, y)
    return comparable(json.loads(json.dumps(model_document(model))))


def snapshot_path(name: str) -> Path:
    return SNAPSHOTS / f"{name}.json.gz"


def load_snapshot(name: str) -> dict:
    with gzip.open(snapshot_path(name), "rt", encoding="utf-8") as f:
        return comparable(json.load(f))


def main() -> None:
    import tempfile

    SNAPSHOTS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        documents = {name: train_cli(name, Path(tmp)) for name in CLI_MODELS}
    documents.update({name: train_exact(name) for name in EXACT_MODELS})
    for name, document in documents.items():
        # mtime=0: the same model gives the same bytes
        with (
            open(snapshot_path(name), "wb") as raw,
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f,
        ):
            f.write(json.dumps(document, sort_keys=True).encode())
        print(
            name,
            document["tree"]["node_count"] if "tree" in document else "",
            snapshot_path(name).stat().st_size,
        )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
