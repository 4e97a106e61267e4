"""The documentation's promises that need no Sphinx to check: every public name has a
docstring, every parameter of every public estimator, public function, and public method
of the estimators and of the other classes the reference lists (``Tree``) is documented
in its docstring's "Parameters" section (the API reference is generated from these), the
README stays a front page that leads to the site, and the user documentation names
published sources rather than internal ones. The site itself is built, warnings as
errors, by CI (.ci/run, "docs")."""

import inspect
import re
from pathlib import Path

import pytest

import gpu_tree

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _public_objects():
    objects = [(f"gpu_tree.{name}", getattr(gpu_tree, name)) for name in gpu_tree.__all__]
    objects = [(name, obj) for name, obj in objects if name != "gpu_tree.__version__"]
    try:
        import gpu_tree.dask as distributed
    except ImportError:  # dask not installed: gpu_tree.dask is left out
        return objects
    names = getattr(distributed, "__all__", None) or [
        n
        for n in vars(distributed)
        if not n.startswith("_") and inspect.isclass(getattr(distributed, n))
    ]
    return objects + [(f"gpu_tree.dask.{n}", getattr(distributed, n)) for n in names]


def _estimators():
    return [
        (name, obj)
        for name, obj in _public_objects()
        if inspect.isclass(obj) and hasattr(obj, "get_params")
    ]


def documented_parameters(docstring: str) -> list[str]:
    """The names a numpydoc "Parameters" section lists (``a, b : int`` lists two)."""
    lines = inspect.cleandoc(docstring or "").splitlines()

    def underlined(k):  # a section title: a line over a line of dashes
        return k + 1 < len(lines) and re.fullmatch(r"-{3,}", lines[k + 1].strip()) is not None

    starts = [k for k, line in enumerate(lines) if line.strip() == "Parameters" and underlined(k)]
    if not starts:
        return []
    names = []
    for k in range(starts[0] + 2, len(lines)):
        if underlined(k):
            break
        entry = lines[k]
        if entry.strip() and not entry.startswith(" "):
            names += [n.strip() for n in entry.split(" : ")[0].split(",")]
    return names


def test_documented_parameters_reads_a_numpydoc_section():
    doc = """Summary.

    Parameters
    ----------
    a : int, default=1
        Text.

        More text.
    b, c : float
        Both.

    Notes
    -----
    d : not a parameter
    """
    assert documented_parameters(doc) == ["a", "b", "c"]
    assert documented_parameters("No sections.") == []


@pytest.mark.parametrize(
    "name, obj", _public_objects(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_public_name_has_a_docstring(name, obj):
    doc = inspect.getdoc(obj)
    assert doc and len(doc.split()) >= 5, f"{name} has no docstring worth the name"


@pytest.mark.parametrize(
    "name, estimator", _estimators(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_public_parameter_is_documented(name, estimator):
    params = set(estimator().get_params(deep=False))
    documented = documented_parameters(estimator.__doc__)
    missing = sorted(params - set(documented))
    assert not missing, f"{name}'s docstring leaves out the parameters {missing}"
    assert len(documented) == len(set(documented)), f"{name} documents a parameter twice"
    assert set(documented) <= params, f"{name} documents {sorted(set(documented) - params)}"


def _public_methods():
    """Every public method of the public estimators that the package defines (scikit-learn
    documents those it inherits from scikit-learn's bases)."""
    methods = []
    for name, estimator in _estimators():
        for method_name, method in inspect.getmembers(estimator, inspect.isfunction):
            if method_name.startswith("_") or not method.__module__.startswith("gpu_tree"):
                continue
            methods.append((f"{name}.{method_name}", method))
    return methods


@pytest.mark.parametrize(
    "name, method", _public_methods(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_parameter_of_a_public_method_is_documented(name, method):
    parameters = list(inspect.signature(method).parameters)[1:]  # not self
    doc = inspect.getdoc(method)
    assert doc, f"{name} has no docstring"
    missing = sorted(set(parameters) - set(documented_parameters(doc)))
    assert not missing, f"{name}'s docstring leaves out the parameters {missing}"


def _classes_in_the_reference() -> set:
    """The names docs/api's pages document with ``autoclass`` / ``autoexception``."""
    pages = (DOCS / "api").glob("*.rst")
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    return set(re.findall(r"^\.\. auto(?:class|exception):: +(\S+)", text, re.M))


def _listed_classes():
    """The public classes that are not estimators but are in the API reference
    (``gpu_tree.Tree``, ``gpu_tree.dask.WorkerLostError``)."""
    listed = _classes_in_the_reference()
    return [
        (name, obj)
        for name, obj in _public_objects()
        if inspect.isclass(obj)
        and not hasattr(obj, "get_params")
        and (name in listed or name.rsplit(".", 1)[-1] in listed)
    ]


def _public_functions():
    """Every public function (``gpu_tree.load``, the exports, ``assert_tree_equal``...),
    and every public method of :func:`_listed_classes`: what they define themselves, not
    what they inherit from Python's or another package's classes."""
    functions = [(name, obj, False) for name, obj in _public_objects() if inspect.isfunction(obj)]
    for name, cls in _listed_classes():
        for method_name, method in inspect.getmembers(cls, inspect.isfunction):
            if method_name.startswith("_") or not method.__module__.startswith("gpu_tree"):
                continue
            bound = not isinstance(inspect.getattr_static(cls, method_name), staticmethod)
            functions.append((f"{name}.{method_name}", method, bound))
    return functions


@pytest.mark.parametrize(
    "name, function, bound", [pytest.param(*f, id=f[0]) for f in _public_functions()]
)
def test_every_parameter_of_a_public_function_is_documented(name, function, bound):
    parameters = list(inspect.signature(function).parameters)[1 if bound else 0 :]
    doc = inspect.getdoc(function)
    assert doc, f"{name} has no docstring"
    documented = [n.lstrip("*") for n in documented_parameters(doc)]  # **kwargs: kwargs
    missing = sorted(set(parameters) - set(documented))
    assert not missing, f"{name}'s docstring leaves out the parameters {missing}"
    assert len(documented) == len(set(documented)), f"{name} documents a parameter twice"
    extra = sorted(set(documented) - set(parameters))
    assert not extra, f"{name} documents {extra}, which it does not take"


def _constructors():
    """The listed classes whose constructor gpu_tree defines (not Exception's)."""
    return [
        pytest.param(name, cls, id=name)
        for name, cls in _listed_classes()
        if (getattr(cls.__init__, "__module__", None) or "").startswith("gpu_tree")
    ]


@pytest.mark.parametrize("name, cls", _constructors())
def test_every_constructor_parameter_of_a_listed_class_is_documented(name, cls):
    """numpydoc's place for them: the class docstring's "Parameters"."""
    parameters = list(inspect.signature(cls.__init__).parameters)[1:]  # not self
    documented = documented_parameters(cls.__doc__)
    missing = sorted(set(parameters) - set(documented))
    assert not missing, f"{name}'s docstring leaves out the parameters {missing}"
    assert set(documented) <= set(parameters), (
        f"{name} documents {set(documented) - set(parameters)}"
    )


def test_public_functions_and_the_tree_methods_are_checked():
    names = {name for name, _, _ in _public_functions()}
    assert {"gpu_tree.load", "gpu_tree.export_text", "gpu_tree.plot_tree"} <= names
    assert {"gpu_tree.export_png", "gpu_tree.export_graphviz"} <= names
    assert "Tree" in _classes_in_the_reference()
    assert {"gpu_tree.Tree.apply", "gpu_tree.Tree.set_numeric_splits"} <= names
    assert "gpu_tree.Tree" in {param.id for param in _constructors()}


def test_there_are_estimators_to_check():
    names = {name for name, _ in _estimators()}
    assert {"gpu_tree.DecisionTreeRegressor", "gpu_tree.RandomForestRegressor"} <= names
    assert "gpu_tree.ObliqueDecisionTreeRegressor" in names and len(names) >= 11


def test_the_readme_is_a_front_page_that_links_to_the_site():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    links = re.findall(r"\]\(((?:docs)/[^)#]*)", readme)
    for page in (
        "docs/install.md",
        "docs/guide/index.md",
        "docs/api/index.rst",
        "docs/examples/",
        "docs/benchmarks.md",
    ):
        assert page in links, f"the README does not link to {page}"
    for link in links:
        assert (ROOT / link).exists(), f"the README links to {link}, which is not there"


def _user_pages():
    pages = [
        ROOT / "README.md",
        *DOCS.rglob("*.md"),
        *DOCS.rglob("*.rst"),
        *DOCS.glob("examples/*.py"),
    ]
    # The contributor's map (docs/architecture.md) may name the project's own issues.
    return [
        p
        for p in pages
        if p.name != "architecture.md"
        and "_build" not in p.parts
        and "auto_examples" not in p.parts
    ]


@pytest.mark.parametrize("page", _user_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_user_documentation_names_published_sources_not_internal_ones(page):
    text = page.read_text(encoding="utf-8")
    for internal in (r"seed document", r"shared/seeds", r"\bissue \d+", r"\bthe seed's\b"):
        assert not re.search(internal, text, re.I), f"{page.name} mentions {internal!r}"


def test_the_benchmarks_page_holds_the_figures_the_bench_script_writes():
    from _shared_data import bench_module

    figures = bench_module("readme_figures")
    page = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    figures.check_markers(page, figures.BLOCKS)  # each block's markers exactly once
    assert figures.parse_args([]).readme == DOCS / "benchmarks.md"


def test_ci_builds_the_site_with_warnings_as_errors():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install --quiet -r docs/requirements.txt" in ci
    assert "sphinx -W --keep-going" in ci and " docs docs/_build/html" in ci
    ignored = (DOCS / ".gitignore").read_text(encoding="utf-8").split()
    assert {"_build/", "auto_examples/", "sg_execution_times.rst"} <= set(ignored)
