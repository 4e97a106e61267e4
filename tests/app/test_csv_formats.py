"""Text files as users have them: separators, encodings, missing-value tokens, columns of
text taken as categories without being named, through each of the three CSV readers
(pyarrow's, the quote-free fast path, the csv module's), which must agree value for value
and message for message."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
from _cli import run_cli
from _shared_data import dataset_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpu_tree
from gpu_tree.app import data_io

READERS = ("arrow", True, False)  # pyarrow's, the fast path, the csv module's


def _use_reader(monkeypatch, reader):
    if reader == "arrow":
        pytest.importorskip("pyarrow")
    monkeypatch.setattr(data_io, "_ARROW_CSV", reader == "arrow")
    monkeypatch.setattr(data_io, "_FAST_CSV", bool(reader))


def _plan(kinds, default=data_io.FEATURE):
    return lambda names: [kinds.get(name, default) for name in names]


def _snapshot(table):
    """Everything a table holds, comparable with ==: NaN as a marker, lines included."""
    table.where(0)  # pyarrow's reader finds its line numbers when asked
    columns = []
    for column in table.columns:
        values = [
            "NaN" if isinstance(v, float) and math.isnan(v) else v for v in column.values.tolist()
        ]
        columns.append((column.name, column.values.dtype.kind, column.categorical, values))
    return table.names, table.n_rows, table.lines.tolist(), columns


def _read_each(monkeypatch, path, plan, **options):
    """Each reader's snapshot of ``path``, or its ValueError's message."""
    results = []
    for reader in READERS:
        _use_reader(monkeypatch, reader)
        try:
            results.append(_snapshot(data_io.read_table(path, plan, **options)))
        except ValueError as error:
            results.append(str(error))
    _use_reader(monkeypatch, True)
    return results


def _ok(result):
    assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
    return result


def _error(result, *phrases):
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    message = " ".join(result.stderr.split())
    for phrase in phrases:
        assert phrase in message, (phrase, message)
    return message


# Fields a hand-made file holds: numbers written every way, missing values of every
# spelling (with spaces), text, text that looks almost like a number, the user's tokens.
_FIELDS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
    st.integers(-1000, 1000).map(str),
    st.sampled_from(["", " ", "?", "NA", "n/a", "N/A", "nan", "NaN", " na ", "-999", "-999.0"]),
    st.sampled_from([" 1.5", "2 ", "+3", ".5", "5.", "1e3", "1_000", "none", "None"]),
    st.sampled_from(["red", "Green", "blue sky", "a,b", 'say "hi"', "é", "1.5.2", "-"]),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    columns=st.lists(st.lists(_FIELDS, min_size=6, max_size=6), min_size=1, max_size=4),
    na_values=st.sampled_from([(), ("none",), ("-999",), ("None", "-")]),
    sep=st.sampled_from([",", ";", "\t"]),
)
def test_the_three_readers_agree_on_any_table(
    tmp_path_factory, monkeypatch, columns, na_values, sep
):
    """Random columns of such fields, each read as a feature (numbers, or text when any
    field is not a number), as text and as a number column: the same table or the same
    message from every reader."""
    path = tmp_path_factory.mktemp("csv") / "random.csv"
    names = [f"c{j}" for j in range(len(columns))] + ["y"]
    rows = [[column[i] for column in columns] + [str(i % 2)] for i in range(6)]
    with open(path, "w", newline="", encoding="utf-8") as out:
        csv.writer(out, delimiter=sep, lineterminator="\n").writerows([names, *rows])
    options = {"sep": sep, "na_values": na_values}
    for kinds in (
        {"y": data_io.TEXT},  # every other column a feature
        {"c0": data_io.TEXT, "y": data_io.SKIP},
        {"c0": data_io.NUMBER},
    ):
        arrow, fast, slow = _read_each(monkeypatch, path, _plan(kinds), **options)
        assert fast == slow
        assert arrow == slow


def test_a_feature_that_turns_to_text_after_many_rows_is_read_again_as_text(tmp_path, monkeypatch):
    """Numbers for three chunks, then text: the column is categorical from its first row,
    each value its text as written (the csv-module readers read the file once more)."""
    monkeypatch.setattr(data_io, "_CHUNK_ROWS", 4)
    path = tmp_path / "late.csv"
    values = [f"{i}.0" if i % 3 else str(i) for i in range(13)] + ["unknown", "7"]
    path.write_text("code,y\n" + "".join(f"{v},{i % 2}\n" for i, v in enumerate(values)))
    arrow, fast, slow = _read_each(monkeypatch, path, _plan({"y": data_io.TEXT}))
    assert arrow == fast == slow
    _, _, _, columns = slow
    assert columns[0][:3] == ("code", "O", True)
    assert columns[0][3] == values  # "3.0" and "3" stay distinct categories


def test_number_tokens_blank_every_spelling_of_their_value(tmp_path, monkeypatch):
    path = tmp_path / "sentinels.csv"
    path.write_text("x,label,y\n-999,none,1\n-999.0,a,0\n 5 ,none ,1\n-998,b,0\n")
    plan = _plan({"y": data_io.TEXT})
    arrow, fast, slow = _read_each(monkeypatch, path, plan, na_values=("-999", "none"))
    assert arrow == fast == slow
    _, _, _, columns = slow
    assert columns[0][3] == ["NaN", "NaN", 5.0, -998.0]
    assert columns[1][3] == [None, "a", None, "b"]


def test_text_in_a_number_column_is_named_with_its_line_by_every_reader(tmp_path, monkeypatch):
    path = tmp_path / "bad.csv"
    path.write_text("w,x,y\n1,2,0\n\n\n3,4,1\nheavy,5,1\n")
    messages = _read_each(monkeypatch, path, _plan({"w": data_io.NUMBER, "y": data_io.TEXT}))
    assert len(set(messages)) == 1
    assert messages[0].endswith(
        "bad.csv, line 6: column 'w' holds the non-numeric value 'heavy'; if text columns are "
        "categorical, declare them: --categorical w"
    )


def test_an_infinite_feature_value_is_the_same_error_from_every_reader(tmp_path, monkeypatch):
    """A feature column (numbers or text, as its values decide) of numbers and an
    infinity: every reader refuses it with its line (pyarrow's read it as a column of
    floats, whose values it then took for text)."""
    path = tmp_path / "inf.csv"
    path.write_text("a,b,y\n1,2,0\n2,-Infinity,1\n3,4,0\n")
    messages = _read_each(monkeypatch, path, _plan({"y": data_io.TEXT}))
    assert messages == [messages[0]] * 3
    assert messages[0].endswith(
        "inf.csv, line 3: column 'b' holds '-Infinity': infinite values are not allowed"
    )
    _error(run_cli("train", path, "-t", "y", "-o", tmp_path / "m.json"), "line 3", "'-Infinity'")


@pytest.mark.parametrize("token", ["inf", "-Infinity", "1e400", " INF "])
def test_an_infinite_number_is_no_missing_value_token_for_any_reader(tmp_path, monkeypatch, token):
    """Issue 43, item 18b: --na-values inf trained through pyarrow (its null values) but
    not through the csv module (infinite values are refused before tokens are looked
    at). Infinite values are not allowed in data, and a number token marks every
    spelling of its value: an infinite token is refused, by every reader alike."""
    path = tmp_path / "inf.csv"
    path.write_text("a,b,y\n1,inf,0\n2,3,1\n3,4,0\n4,5,1\n")
    for kinds in ({"y": data_io.TEXT}, {"b": data_io.TEXT}):
        messages = _read_each(monkeypatch, path, _plan(kinds), na_values=(token,))
        assert messages == [messages[0]] * 3
        assert isinstance(messages[0], str), messages[0]
        assert f"--na-values {token.strip()!r}" in messages[0]
    model = tmp_path / "m.json"
    _error(
        run_cli("train", path, "-t", "y", "--na-values", f"none,{token}", "-o", model),
        f"--na-values {token.strip()!r}: an infinite number cannot mark missing values",
        "infinite values are not allowed in data",
    )
    assert not model.exists()


def test_semicolon_file_is_read_with_sep_and_its_error_without_suggests_it(tmp_path):
    data = tmp_path / "semi.csv"
    rows = [f"{i};{'Yes' if i % 3 else 'No'};{1000 + 37 * i % 500};{i % 2}" for i in range(40)]
    data.write_text("id;student;balance;default\n" + "\n".join(rows) + "\n")
    model = tmp_path / "m.json"
    _error(
        run_cli("train", data, "-t", "default", "-o", model),
        "unknown target column 'default'",
        "if the fields are separated by ';', pass --sep ';'",
    )
    assert not model.exists()
    result = _ok(
        run_cli("train", data, "--sep", ";", "-t", "default", "--ignore", "id", "-o", model)
    )
    assert "2 features (1 categorical)" in result.stdout
    tsv = tmp_path / "tabs.txt.csv"
    tsv.write_text(data.read_text().replace(";", "\t"))
    _ok(run_cli("train", tsv, "--sep", "\\t", "-t", "default", "--ignore", "id", "-o", model))


def test_na_values_and_encoding_options_reach_every_command(tmp_path):
    data = tmp_path / "latin.csv"
    lines = ["ville,temp,y"] + [
        f"{['Zürich', 'Genève', 'Bâle'][i % 3]},{-999 if i % 5 == 0 else i},{i % 3 == 0}"
        for i in range(30)
    ]
    data.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    model = tmp_path / "m.json"
    _error(
        run_cli("train", data, "-t", "y", "-o", model),
        "not UTF-8 text",
        "--encoding latin-1",
    )
    options = ["--encoding", "latin-1", "--na-values", "-999"]
    _ok(run_cli("train", data, "-t", "y", *options, "-o", model))
    estimator = gpu_tree.load(model)
    assert list(estimator.categories_[0]) == ["Bâle", "Genève", "Zürich"]
    # -999 was missing in training: the tree saw NaN, not a number below every other.
    assert estimator.missing_in_training_.tolist() == [False, True]
    result = _ok(run_cli("evaluate", model, data, "-t", "y", *options))
    assert "accuracy: 1.0000" in result.stdout
    result = _ok(run_cli("predict", model, data, *options))
    assert result.stdout.splitlines()[:3] == ["prediction", "True", "False"]
    _error(
        run_cli("train", data, "-t", "y", "--encoding", "klingon", "-o", model),
        "unknown text encoding 'klingon'",
    )
    for codec in ("base64", "zlib", "hex"):  # known codecs, but of bytes, not text
        _error(
            run_cli("train", data, "-t", "y", "--encoding", codec, "-o", model),
            f"{codec!r} is not a text encoding",
        )


def test_text_format_options_are_refused_for_other_formats(tmp_path):
    data = tmp_path / "d.npz"
    np.savez(data, X=np.arange(12.0).reshape(6, 2), y=np.arange(6) % 2)
    model = tmp_path / "m.json"
    for option in (["--sep", ";"], ["--na-values", "x"], ["--encoding", "latin-1"]):
        _error(
            run_cli("train", data, *option, "-o", model),
            f"{option[0]} is for .csv and .tsv files only",
        )


def test_weight_errors_name_the_line_after_blank_lines_with_pyarrow_reader(tmp_path):
    pytest.importorskip("pyarrow")
    data = tmp_path / "w.csv"
    data.write_text("x,w,y\n1,1,0\n\n2,1,1\n\n\n3,-2,0\n4,1,1\n")
    _error(
        run_cli("train", data, "-t", "y", "--weight", "w", "-o", tmp_path / "m.json"),
        "w.csv, line 7: the weight column 'w'",
    )


def test_titanic_trains_with_its_text_columns_categorical_and_ids_ignored(tmp_path):
    data = dataset_path("titanic_raw.csv")
    with open(data, encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    text_columns = [c for c in ("name", "sex", "ticket", "cabin", "embarked") if c in header]
    assert "sex" in text_columns, header
    ignored = [c for c in ("name", "ticket", "cabin", "boat", "body", "home.dest") if c in header]
    target = "survived" if "survived" in header else header[1]
    model = tmp_path / "m.json"
    result = _ok(
        run_cli(
            "train",
            data,
            "-t",
            target,
            "--ignore",
            ",".join(ignored),
            "--max-depth",
            "4",
            "-o",
            model,
        )
    )
    assert "categorical" in result.stdout
    estimator = gpu_tree.load(model)
    names = list(estimator.feature_names_in_)
    assert "sex" in names and not set(ignored) & set(names)
    categorical = [names[j] for j in estimator._category_maps.features]
    assert "sex" in categorical and all(c in categorical for c in text_columns if c in names)
    result = _ok(run_cli("evaluate", model, data, "-t", target))
    accuracy = float(result.stdout.split("accuracy: ")[1].split()[0])
    assert accuracy > 0.78  # sex and class alone give about 0.79


def test_plain_files_are_read_by_pyarrow_alone(tmp_path, monkeypatch):
    """Spaces, missing values of every spelling, text and gzip: no fallback to the
    csv-module readers (they would fail here) until a message needs a line number."""
    pytest.importorskip("pyarrow")
    _use_reader(monkeypatch, "arrow")
    path = tmp_path / "plain.csv"
    path.write_text("x,colour,y\n 1.5 ,red,0\nNA,Blue,1\n?, ,0\n2,n/a,1\n")

    def refuse(*args, **kwargs):
        raise AssertionError("the csv-module readers were used")

    real_columns = data_io._CsvColumns
    monkeypatch.setattr(data_io, "_CsvColumns", refuse)
    table = data_io.read_table(path, _plan({"y": data_io.TEXT}))
    assert table.column("x").values.tolist()[0] == 1.5
    assert np.isnan(table.column("x").values[1:3]).all()
    assert table.column("colour").values.tolist() == ["red", "Blue", None, None]
    assert table.column("colour").categorical and table.lines is None
    monkeypatch.setattr(data_io, "_CsvColumns", real_columns)
    assert table.where(3) == "line 5"
