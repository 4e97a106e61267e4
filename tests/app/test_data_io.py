"""The CSV reader (gpu_tree/app/data_io.py): values read exactly as written, and the
quote-free fast path, the csv module's path and pyarrow's reader agree value for value,
line for line and message for message, whatever the chunks of rows."""

from __future__ import annotations

import csv
import gzip
import math

import numpy as np
import pytest
from _cli import use_csv_reader


# -- CSV reading: values against what was written, fast path against the csv-module path --
def _plan_of(kinds):
    import gpu_tree.app.data_io as data_io

    def plan(names):
        return [kinds.get(name, kinds.get(j, data_io.NUMBER)) for j, name in enumerate(names)]

    return plan


def _read_both(path, kinds, monkeypatch, chunk_rows=None, **options):
    """read_table through the fast path and through the csv-module path: (table, table).
    Through pyarrow's reader too, where installed: its table must equal theirs, line
    numbers included (found when asked). A ValueError on any path fails the test (errors:
    :func:`_errors_of_both`)."""
    import gpu_tree.app.data_io as data_io

    if chunk_rows is not None:
        monkeypatch.setattr(data_io, "_CHUNK_ROWS", chunk_rows)
    results = []
    monkeypatch.setattr(data_io, "_ARROW_CSV", False)
    for fast in (True, False):
        monkeypatch.setattr(data_io, "_FAST_CSV", fast)
        results.append(data_io.read_table(path, _plan_of(kinds), **options))
    monkeypatch.setattr(data_io, "_FAST_CSV", True)
    monkeypatch.setattr(data_io, "_ARROW_CSV", True)
    arrow = data_io.read_table(path, _plan_of(kinds), **options)
    arrow.where(0)  # its line numbers, found as a message would find them
    _assert_same(arrow, results[1])
    return results


def _errors_of_both(path, kinds, monkeypatch, chunk_rows=None, **options):
    """The ValueError messages of read_table on the fast and the csv-module path; a
    table instead of an error fails the test."""
    import gpu_tree.app.data_io as data_io

    if chunk_rows is not None:
        monkeypatch.setattr(data_io, "_CHUNK_ROWS", chunk_rows)
    messages = []
    monkeypatch.setattr(data_io, "_ARROW_CSV", False)
    for fast in (True, False):
        monkeypatch.setattr(data_io, "_FAST_CSV", fast)
        with pytest.raises(ValueError) as caught:
            data_io.read_table(path, _plan_of(kinds), **options)
        messages.append(str(caught.value))
    monkeypatch.setattr(data_io, "_FAST_CSV", True)
    monkeypatch.setattr(data_io, "_ARROW_CSV", True)
    with pytest.raises(ValueError) as caught:  # pyarrow's reader: the same message
        data_io.read_table(path, _plan_of(kinds), **options)
    assert str(caught.value) == messages[1]
    return messages


def _assert_same(fast, slow):
    assert fast.names == slow.names and fast.n_rows == slow.n_rows
    assert fast.generated_names == slow.generated_names
    assert np.array_equal(fast.lines, slow.lines)
    assert [c.name for c in fast.columns] == [c.name for c in slow.columns]
    for a, b in zip(fast.columns, slow.columns, strict=True):
        assert a.categorical == b.categorical and a.values.dtype == b.values.dtype, a.name
        if a.is_text:
            assert a.values.tolist() == b.values.tolist(), a.name
        else:
            assert np.array_equal(a.values, b.values, equal_nan=True), a.name
            assert np.array_equal(np.signbit(a.values), np.signbit(b.values)), a.name


def _assert_table(table, names, expected, categorical=(), lines=None):
    """``table`` holds exactly ``expected`` (column name -> values, in file order): a list
    of floats (NaN: missing) is a numeric column, read as float64; a list of strings
    (None: missing) a text column, read as an object array. ``names``: every column of
    the file, read or not; ``categorical``: the columns that must be flagged so."""
    assert table.names == names
    assert [c.name for c in table.columns] == list(expected)
    for name, values in expected.items():
        column = table.column(name)
        assert column.categorical == (name in categorical), name
        assert len(column.values) == len(values) == table.n_rows, name
        if all(isinstance(v, float) for v in values):
            assert column.values.dtype == np.float64, name
            got = column.values.tolist()
            assert [math.isnan(v) for v in got] == [math.isnan(v) for v in values], (name, got)
            assert [v for v in got if not math.isnan(v)] == [
                v for v in values if not math.isnan(v)
            ], (name, got)
            signs = [math.copysign(1, v) for v in values if not math.isnan(v)]
            assert [math.copysign(1, v) for v in got if not math.isnan(v)] == signs, name
        else:
            assert column.values.dtype == object, name
            assert column.values.tolist() == values, name
            assert column.missing().tolist() == [v is None for v in values], name
    if lines is not None:
        table.where(0)  # pyarrow's reader finds line numbers only when asked
        assert table.lines.tolist() == lines


MISSING_AND_ODD = """a,b,c,label
1,,x,0
2,?,y,1
3,NA,,0
4,n/a,N/A,1
5,N/a,?,0
6,nan,z,1
7,NaN,x,0
8, ? ,y,1
9, ,z,0
-0,+1,x,1
.5,5.,y,0
1e5,1_000,z,1
1E-3,\uff11,x,0
-1.25,  2  ,y,1
"""
NAN = float("nan")
# What MISSING_AND_ODD holds, written out by hand (Python's float() reads "1_000" and
# the full-width digit "\uff11"; the csv module does, so the fast path must too).
MISSING_AND_ODD_VALUES = {
    "a": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, -0.0, 0.5, 1e5, 1e-3, -1.25],
    "b": [NAN] * 9 + [1.0, 5.0, 1000.0, 1.0, 2.0],
    "c": ["x", "y", None, None, None, "z", "x", "y", "z", "x", "y", "z", "x", "y"],
    "label": ["0", "1"] * 7,
}
MISSING_AND_ODD_NAMES = ["a", "b", "c", "label"]


@pytest.mark.parametrize("chunk_rows", [None, 1, 3])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_csv_fast_path_reads_exactly_what_the_csv_module_path_reads(
    tmp_path, monkeypatch, chunk_rows, newline
):
    kinds = {"c": "category", "label": "text"}
    expected = (MISSING_AND_ODD_NAMES, MISSING_AND_ODD_VALUES, {"c"})
    path = tmp_path / "odd.csv"
    path.write_bytes(MISSING_AND_ODD.replace("\n", newline).encode())
    fast, slow = _read_both(path, kinds, monkeypatch, chunk_rows)
    _assert_same(fast, slow)
    _assert_table(fast, *expected, lines=list(range(2, 16)))
    # Blank lines (also ones of delimiters only) in the middle and at the end, a BOM, gzip.
    body = MISSING_AND_ODD.replace("7,NaN,x,0\n", "7,NaN,x,0\n\n  \n,,\n") + "\n\n"
    lines = list(range(2, 9)) + list(range(12, 19))
    path.write_bytes(("\ufeff" + body).replace("\n", newline).encode())
    fast, slow = _read_both(path, kinds, monkeypatch, chunk_rows)
    _assert_same(fast, slow)
    _assert_table(fast, *expected, lines=lines)  # the BOM is not part of the name "a"
    packed = tmp_path / "odd.csv.gz"
    with gzip.open(packed, "wb") as out:
        out.write(path.read_bytes())
    fast, slow = _read_both(packed, kinds, monkeypatch, chunk_rows)
    _assert_same(fast, slow)
    _assert_table(fast, *expected, lines=lines)
    # Tab-separated.
    tsv = tmp_path / "odd.tsv"
    tsv.write_bytes(body.replace(",", "\t").replace("\n", newline).encode())
    fast, slow = _read_both(tsv, kinds, monkeypatch, chunk_rows)
    _assert_same(fast, slow)
    _assert_table(fast, *expected, lines=lines)


# Rows as Python values; written with the csv module (quoting where it must), then read
# back and compared value by value. Quote-free rows first, so that with small chunks the
# first chunks take the fast path and the rest the csv-module path.
QUOTED_HEADER = ["id", "price", "city, country", "note", "skipped", "label"]
QUOTED_ROWS = [
    [1, 2.5, "Oslo", "plain", "s", "yes"],
    [2, "", "Bergen", "NA", "s", "no"],
    [3, -0.125, "Zürich", "?", "s", "yes"],
    [4, 1e-3, "Paris, France", 'say "hi"', "s", "no"],  # delimiter and quotes inside
    [5, "NA", "two\nlines", "", "s", "yes"],  # a line break inside a field
    [6, "7.75", "  padded  ", "tab\there", "s", "no"],  # surrounding spaces are stripped
    [7, -0.0, '"quoted"', "007", "s", "yes"],  # a category that looks like a number
    [8, 1e300, "a\r\nb", "n/a", "s", "no"],
]
QUOTED_VALUES = {
    "id": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
    "price": [2.5, NAN, -0.125, 1e-3, NAN, 7.75, -0.0, 1e300],
    "city, country": [
        "Oslo",
        "Bergen",
        "Zürich",
        "Paris, France",
        "two\nlines",
        "padded",
        '"quoted"',
        "a\r\nb",
    ],
    "note": ["plain", None, None, 'say "hi"', None, "tab\there", "007", None],
    "label": ["yes", "no"] * 4,
}
QUOTED_KINDS = {"city, country": "category", "note": "category", "skipped": "skip", "label": "text"}


def _write_rows(path, header, rows, delimiter, quoting, lineterminator):
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", newline="", encoding="utf-8") as out:
        writer = csv.writer(
            out, delimiter=delimiter, quoting=quoting, lineterminator=lineterminator
        )
        if header is not None:
            writer.writerow(header)
        writer.writerows(rows)


def _row_lines(rows, first_line):
    """The physical lines each written row starts and ends on: a line break inside a
    quoted field ("\n", "\r\n" or "\r") starts a new line."""
    starts, ends, line = [], [], first_line
    for row in rows:
        text = "".join(str(field) for field in row)
        breaks = text.replace("\r\n", "\n").replace("\r", "\n").count("\n")
        starts.append(line)
        ends.append(line + breaks)
        line += breaks + 1
    return starts, ends


@pytest.mark.parametrize("fast", [True, False, "arrow"])
@pytest.mark.parametrize("chunk_rows", [None, 2])
@pytest.mark.parametrize("quoting", [csv.QUOTE_MINIMAL, csv.QUOTE_ALL], ids=["minimal", "all"])
@pytest.mark.parametrize("name", ["data.csv", "data.csv.gz", "data.tsv", "data.tsv.gz"])
def test_csv_tsv_gzip_with_quoted_fields_read_as_written(
    tmp_path, monkeypatch, name, quoting, chunk_rows, fast
):
    import gpu_tree.app.data_io as data_io

    use_csv_reader(monkeypatch, fast)
    if chunk_rows is not None:
        monkeypatch.setattr(data_io, "_CHUNK_ROWS", chunk_rows)
    path = tmp_path / name
    delimiter = "\t" if ".tsv" in name else ","
    _write_rows(path, QUOTED_HEADER, QUOTED_ROWS, delimiter, quoting, "\r\n")
    if name.endswith(".gz"):
        assert path.read_bytes()[:2] == b"\x1f\x8b"  # really gzip
    table = data_io.read_table(path, _plan_of(QUOTED_KINDS))
    _assert_table(table, QUOTED_HEADER, QUOTED_VALUES, categorical={"city, country", "note"})
    assert table.n_rows == len(QUOTED_ROWS) and not table.generated_names
    starts, ends = _row_lines(QUOTED_ROWS, 2)
    # Rows 5 and 8 span two lines each ("\r\n" inside row 8 is one line break).
    assert starts == [2, 3, 4, 5, 6, 8, 9, 10] and ends[-1] == 11
    table.where(0)  # pyarrow's reader finds line numbers only when asked
    for line, start, end in zip(table.lines.tolist(), starts, ends, strict=True):
        assert start <= line <= end
        if start == end:
            assert line == start


@pytest.mark.parametrize("fast", [True, False, "arrow"])
@pytest.mark.parametrize("name", ["plain.csv", "plain.csv.gz", "plain.tsv", "plain.tsv.gz"])
def test_quote_free_gzip_and_tsv_files_take_the_fast_path_and_read_as_written(
    tmp_path, monkeypatch, name, fast
):
    import gpu_tree.app.data_io as data_io

    slow_calls = []
    real_slow = data_io._read_rows_slow
    monkeypatch.setattr(
        data_io, "_read_rows_slow", lambda *a: slow_calls.append(1) or real_slow(*a)
    )
    use_csv_reader(monkeypatch, fast)
    rng = np.random.default_rng(11)
    x = rng.normal(size=50).round(4).tolist()
    w = rng.uniform(-1e6, 1e6, size=50).tolist()
    z = rng.integers(-5, 5, size=50).tolist()
    colour = rng.choice(["red", "green", "dark blue", "NA", ""], size=50).tolist()
    # Missing values of every spelling, two side by side in rows 3 and 38 ("x" and "w").
    x_written = ["" if i % 7 == 3 else ("N/A" if i % 11 == 5 else v) for i, v in enumerate(x)]
    w_written = ["" if i % 5 == 3 else ("?" if i % 13 == 4 else v) for i, v in enumerate(w)]
    rows = [[x_written[i], w_written[i], colour[i], z[i], i % 2] for i in range(50)]
    path = tmp_path / name
    delimiter = "\t" if ".tsv" in name else ","
    names = ["x", "w", "colour", "z", "y"]
    _write_rows(path, names, rows, delimiter, csv.QUOTE_MINIMAL, "\n")
    with (gzip.open if name.endswith(".gz") else open)(path, "rt") as written:
        assert '"' not in written.read()
    table = data_io.read_table(path, _plan_of({"colour": "category", "y": "text"}))
    _assert_table(
        table,
        names,
        {
            "x": [NAN if isinstance(v, str) else v for v in x_written],
            "w": [NAN if isinstance(v, str) else v for v in w_written],
            "colour": [None if c in ("NA", "") else c for c in colour],
            "z": [float(v) for v in z],
            "y": [str(i % 2) for i in range(50)],
        },
        categorical={"colour"},
        lines=list(range(2, 52)),
    )
    assert slow_calls == ([] if fast else [1])  # pyarrow's reader: none either


@pytest.mark.parametrize("fast", [True, False, "arrow"])
@pytest.mark.parametrize("name", ["plain.csv", "plain.tsv.gz"])
def test_no_header_first_row_is_data_and_leading_blank_lines_are_skipped(
    tmp_path, monkeypatch, name, fast
):
    import gpu_tree.app.data_io as data_io

    use_csv_reader(monkeypatch, fast)
    delimiter = "\t" if ".tsv" in name else ","
    rows = [[1, "a", 2.5], [2, "b", ""], [3, "", 4], [4, "d, e", "-1e3"]]
    path = tmp_path / name
    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "wt", newline="", encoding="utf-8") as out:
        out.write("\n \n")  # two blank lines before the first row
        csv.writer(out, delimiter=delimiter, lineterminator="\n").writerows(rows)
    plan = _plan_of({1: "category"})
    table = data_io.read_table(path, plan, header=False)
    values = {"x0": [1.0, 2.0, 3.0, 4.0], "x1": ["a", "b", None, "d, e"]}
    values["x2"] = [2.5, NAN, 4.0, -1000.0]
    _assert_table(table, ["x0", "x1", "x2"], values, {"x1"}, lines=[3, 4, 5, 6])
    assert table.generated_names
    # Read with a header (the default), the same file's first row is refused: it is numbers.
    with pytest.raises(ValueError) as caught:
        data_io.read_table(path, _plan_of({}))
    assert str(caught.value) == (
        f"{path}, line 3: the header row has the number '1' as a column name; if the file "
        "has no header row, pass --no-header (columns x0, x1, ...)"
    )


def test_one_column_file_and_a_header_after_blank_lines(tmp_path, monkeypatch):
    import gpu_tree.app.data_io as data_io

    path = tmp_path / "one.csv"
    path.write_text('\n\ny\n1\n"2"\n\n?\n3.5\n')
    for fast in (True, False, "arrow"):
        use_csv_reader(monkeypatch, fast)
        table = data_io.read_table(path, _plan_of({}))
        _assert_table(table, ["y"], {"y": [1.0, 2.0, NAN, 3.5]}, lines=[4, 5, 7, 8])
    path.write_text("\n \nname,v\nb,1\n")
    table = data_io.read_table(path, _plan_of({"name": "category"}))
    _assert_table(table, ["name", "v"], {"name": ["b"], "v": [1.0]}, {"name"}, lines=[4])


def test_csv_fast_path_random_tables_with_quotes_and_chunks(tmp_path, monkeypatch):
    rng = np.random.default_rng(7)
    n = 500
    digits = rng.integers(0, 8, size=(n, 4)).tolist()
    values = [
        [round(v, k) for v, k in zip(row, places, strict=True)]
        for row, places in zip((rng.normal(size=(n, 4)) * 100).tolist(), digits, strict=True)
    ]
    text = np.array(["red", "green", "", "NA", "blue sky"])[rng.integers(0, 5, n)]
    lines = ["x,y,colour,z,w,t"]
    written = []
    for i in range(n):
        fields = [f"{v!r}" if rng.random() > 0.05 else "" for v in values[i]]
        written.append(fields)
        a, b, c, d = fields
        lines.append(f"{a},{b},{text[i]},{c},{d},{i % 3}")
    kinds = {"colour": "category", "t": "text", "w": "skip"}
    path = tmp_path / "random.csv"
    path.write_text("\n".join(lines) + "\n")

    def column(k):
        return [float(f[k]) if f[k] else NAN for f in written]

    colours = [None if t in ("", "NA") else str(t) for t in text]
    expected = {
        "x": column(0),
        "y": column(1),
        "colour": colours,
        "z": column(2),
        "t": [str(i % 3) for i in range(n)],
    }
    names = ["x", "y", "colour", "z", "w", "t"]
    for chunk_rows in (None, 64, 7):
        fast, slow = _read_both(path, kinds, monkeypatch, chunk_rows)
        _assert_same(fast, slow)
        _assert_table(fast, names, expected, {"colour"}, lines=list(range(2, n + 2)))
    # Quoted fields from line 300 on (one with a delimiter, one across two lines).
    lines[300] = lines[300].replace("red", '"red, really"').replace("green", '"gre\nen"')
    lines[301] = '"1.5",' + lines[301].split(",", 1)[1]
    path.write_text("\n".join(lines) + "\n")
    expected["colour"][299] = {"red": "red, really", "green": "gre\nen"}.get(
        colours[299], colours[299]
    )
    expected["x"][300] = 1.5
    spans = 2 if '"gre\nen"' in lines[300] else 1
    row_lines = list(range(2, 301)) + [300 + spans] + list(range(301 + spans, n + 1 + spans))
    for chunk_rows in (None, 64, 7):
        fast, slow = _read_both(path, kinds, monkeypatch, chunk_rows)
        _assert_same(fast, slow)
        _assert_table(fast, names, expected, {"colour"}, lines=row_lines)
    # A quoted header.
    path.write_text('"x","y","colour","z","w","t"\n' + "\n".join(lines[1:100]) + "\n")
    fast, slow = _read_both(path, kinds, monkeypatch, 7)
    _assert_same(fast, slow)
    _assert_table(fast, names, {k: v[:99] for k, v in expected.items()}, {"colour"})


# Each bad file and its whole message; "{path}" is the file. "two errors": which error
# comes first depends on the chunks of rows (within a chunk, the first column with a bad
# value, then its first bad row), so either message is right; both paths agree.
_HINT = "if text columns are categorical, declare them: --categorical"
BAD_FILES = {
    "inf": (
        "a,b\n1,2\n3,4\n5,inf\n",
        "line 4: column 'b' holds 'inf': infinite values are not allowed",
    ),
    "-Infinity": (
        "a,b\n1,2\n3,-Infinity\n",
        "line 3: column 'b' holds '-Infinity': infinite values are not allowed",
    ),
    "overflow": (
        "a,b\n1,2\n3,1e400\n",
        "line 3: column 'b' holds '1e400': infinite values are not allowed",
    ),
    "text": (
        "a,b\n1,2\n3,4\nx,5\n",
        f"line 4: column 'a' holds the non-numeric value 'x'; {_HINT} a",
    ),
    "short row": ("a,b\n1,2\n3\n4,5\n", "line 3: 1 fields, but the header has 2 columns"),
    "long row": ("a,b\n1,2\n3,4,5\n", "line 3: 3 fields, but the header has 2 columns"),
    "two errors": (
        "a,b\n1,2\n3,x\ny,4\n",
        (
            f"line 3: column 'b' holds the non-numeric value 'x'; {_HINT} b",
            f"line 4: column 'a' holds the non-numeric value 'y' (so do 'b'); {_HINT} a,b",
        ),
    ),
    "header only": ("a,b\n\n\n", "no data rows after the header"),
    "header only, no newline": ("a,b", "no data rows after the header"),
    "blank": ("\n \n", "the file is empty (no header row)"),
    "quoted text": (
        'a,b\n1,2\n"3",x\n',
        f"line 3: column 'b' holds the non-numeric value 'x'; {_HINT} b",
    ),
    "after a two-line field": (
        'a,b,c\n1,2,x\n3,"4",y\n5,6,"z\nz"\n7,eight,w\n',
        f"line 6: column 'b' holds the non-numeric value 'eight'; {_HINT} b",
    ),
    "short row after quotes": ('a,b\n"1",2\n3\n', "line 3: 1 fields, but the header has 2 columns"),
}


def _message(path, tail):
    return f"{path}: {tail}" if not tail.startswith("line ") else f"{path}, {tail}"


@pytest.mark.parametrize("case", list(BAD_FILES))
@pytest.mark.parametrize("chunk_rows", [None, 1, 2])
@pytest.mark.parametrize("name", ["bad.csv", "bad.tsv.gz"])
def test_csv_errors_name_the_line_column_and_value_on_both_paths(
    case, chunk_rows, name, tmp_path, monkeypatch
):
    text, tails = BAD_FILES[case]
    tails = tails if isinstance(tails, tuple) else (tails,)
    kinds = {"c": "category"}
    path = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(path, "wt", newline="") as out:
            out.write(text.replace(",", "\t"))
    else:
        path.write_text(text)
    fast, slow = _errors_of_both(path, kinds, monkeypatch, chunk_rows)
    assert fast == slow
    assert fast in [_message(path, tail) for tail in tails], fast


def test_csv_errors_report_the_first_of_many_errors_on_both_paths(tmp_path, monkeypatch):
    rows = [f"{i},{i}" for i in range(40)]
    rows[25] = "25,inf"
    rows[12] = "twelve,12"
    path = tmp_path / "errors.csv"
    path.write_text("a,b\n" + "\n".join(rows) + "\n")
    expected = f"{path}, line 14: column 'a' holds the non-numeric value 'twelve'; {_HINT} a"
    for chunk_rows in (None, 5, 13, 30):
        assert _errors_of_both(path, {}, monkeypatch, chunk_rows) == [expected, expected]
    rows[12] = "12,12"
    path.write_text("a,b\n" + "\n".join(rows) + "\n")
    expected = f"{path}, line 27: column 'b' holds 'inf': infinite values are not allowed"
    for chunk_rows in (None, 5, 13, 30):
        assert _errors_of_both(path, {}, monkeypatch, chunk_rows) == [expected, expected]


def test_damaged_gzip_and_non_utf8_files_are_named(tmp_path, monkeypatch):
    import gpu_tree.app.data_io as data_io

    packed = tmp_path / "cut.csv.gz"
    whole = gzip.compress(("a,b\n" + "".join(f"{i},{i * i}\n" for i in range(5000))).encode())
    packed.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match=r"cut\.csv\.gz: damaged gzip file"):
        data_io.read_table(packed, _plan_of({}))
    latin = tmp_path / "latin.csv"
    latin.write_bytes("a,b\n1,Z\xfcrich\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin\.csv, line 2: not UTF-8 text \(.* at byte 7\)"):
        data_io.read_table(latin, _plan_of({"b": "category"}))
    for reader in (True, False, "arrow"):  # told its encoding, the file reads
        use_csv_reader(monkeypatch, reader)
        table = data_io.read_table(latin, _plan_of({"b": "category"}), encoding="latin-1")
        assert table.column("b").values.tolist() == ["Z\u00fcrich"]
    use_csv_reader(monkeypatch, True)
    # Far into a file (the decoder works in chunks), plain and gzipped, after a BOM and a
    # two-byte character split across the readers' blocks: the byte from the start and
    # its line.
    head = ("\ufeffa,b\n" + "1,zz\n" * 30_000 + "2,\u00e9\n" * 200_000).encode()
    bad = head + b"3,Z\xfcrich\n"
    big = tmp_path / "big.csv"
    big.write_bytes(bad)
    with gzip.open(tmp_path / "big.csv.gz", "wb") as out:
        out.write(bad)
    where = f"line {1 + 30_000 + 200_000 + 1}: not UTF-8 text (invalid start byte at byte "
    for path in (big, tmp_path / "big.csv.gz"):
        with pytest.raises(ValueError) as caught:
            data_io.read_table(path, _plan_of({"b": "category"}))
        assert str(caught.value) == (
            f"{path}, {where}{len(head) + 3}); if the file has another encoding, pass it: "
            "--encoding latin-1, say"
        )
    # A gzip file without the .gz ending is not silently read as text either.
    disguised = tmp_path / "packed.csv"
    disguised.write_bytes(gzip.compress(b"a,b\n1,2\n"))
    with pytest.raises(ValueError, match=r"packed\.csv, line 1: not UTF-8 text"):
        data_io.read_table(disguised, _plan_of({}))


def test_no_header_reading_matches_on_both_paths(tmp_path, monkeypatch):
    path = tmp_path / "plain.csv"
    path.write_text("\n1,a,2.5\n2,b,\n3,,4\n")
    for chunk_rows in (None, 1, 2):
        fast, slow = _read_both(path, {1: "category"}, monkeypatch, chunk_rows, header=False)
        _assert_same(fast, slow)
        expected = {"x0": [1.0, 2.0, 3.0], "x1": ["a", "b", None], "x2": [2.5, NAN, 4.0]}
        _assert_table(fast, ["x0", "x1", "x2"], expected, {"x1"}, lines=[2, 3, 4])
        assert fast.generated_names


def test_csv_fast_path_is_taken_for_plain_and_missing_value_chunks(tmp_path, monkeypatch):
    import gpu_tree.app.data_io as data_io

    slow_calls = []
    real_slow = data_io._read_rows_slow
    monkeypatch.setattr(
        data_io, "_read_rows_slow", lambda *a: slow_calls.append(1) or real_slow(*a)
    )
    monkeypatch.setattr(data_io, "_CHUNK_ROWS", 4)
    path = tmp_path / "plain.csv"
    rows = ["1.5,,x,0", "2,?,y,1", "3,NA,,0", "4,n/A,N/A,1", "nan,-7,z,0", ",1e3,x,1"]
    path.write_text("a,b,c,label\r\n" + "\r\n".join(rows) + "\r\n\r\n")
    plan = {"c": "category", "label": "text"}
    fast, slow = _read_both(path, plan, monkeypatch)
    _assert_same(fast, slow)
    assert len(slow_calls) == 1  # the csv-module run of _read_both only
    assert fast.column("b").values[4:].tolist() == [-7.0, 1000.0]
