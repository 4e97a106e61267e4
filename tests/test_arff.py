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
