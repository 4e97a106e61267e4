"""The ARFF reader: quoted names, nominal and numeric types, missing values, bad rows."""

import pytest

from gpu_tree.app.arff import read_arff


def test_reads_names_types_values_and_missing(tmp_path):
    path = tmp_path / "t.arff"
    path.write_text(
        "% a comment\n@relation t\n@attribute 'on thyroxine' {f, t}\n"
        "@attribute age numeric\n@ATTRIBUTE class {'a b', c}\n\n@data\n"
        "f, 41, 'a b'\nt,?,c\n% trailing comment\n"
    )
    names, nominal, rows = read_arff(path)
    assert names == ["on thyroxine", "age", "class"]
    assert nominal == [True, False, True]
    assert rows == [["f", "41", "a b"], ["t", None, "c"]]


@pytest.mark.parametrize(
    "row, message",
    [("f, 41", "line 5: 2 values, but 3 attributes"), ("{0 f, 2 c}", "sparse ARFF")],
)
def test_bad_rows_name_the_line(tmp_path, row, message):
    path = tmp_path / "t.arff"
    path.write_text(
        "@attribute a {f, t}\n@attribute age numeric\n@attribute class {x, c}\n@data\n" + row
    )
    with pytest.raises(ValueError, match=message):
        read_arff(path)


def test_an_attribute_named_twice_is_refused_naming_the_line(tmp_path):
    """Before, the second column was read under the first's name: 50% accuracy on the
    training file itself."""
    path = tmp_path / "twice.arff"
    path.write_text(
        "@relation r\n@attribute a numeric\n@attribute 'a' numeric\n@attribute c {x,y}\n"
        "@data\n1,2,x\n"
    )
    with pytest.raises(ValueError, match=r"line 3: the attribute name 'a' appears twice"):
        read_arff(path)


def test_a_string_attribute_is_read_as_categories(tmp_path):
    """scipy.io.arff refuses string attributes (why this reader is kept): here a string
    attribute is a feature of categories, as a CSV column of text is."""
    from gpu_tree.app import data_io

    path = tmp_path / "s.arff"
    rows = [
        f"'{name}',{x},{'yes' if name == 'alpha' else 'no'}"
        for name, x in [
            ("alpha", 0.1),
            ("beta", 0.2),
            ("gamma", 0.3),
            ("alpha", 0.4),
            ("beta", 0.5),
        ]
    ]
    path.write_text(
        "@relation s\n@attribute name string\n@attribute x numeric\n@attribute y {no,yes}\n"
        "@data\n" + "\n".join(rows) + "\n"
    )
    table = data_io.read_table(path, lambda names: [data_io.FEATURE, data_io.FEATURE, data_io.TEXT])
    name = table.column("name")
    assert name.categorical and name.values.tolist() == ["alpha", "beta", "gamma", "alpha", "beta"]
    assert not table.column("x").categorical
    assert table.column("x").values.tolist() == [0.1, 0.2, 0.3, 0.4, 0.5]
