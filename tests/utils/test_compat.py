"""gpu_tree.utils.compat: the parameter names read once per class."""

import pytest

import gpu_tree
from gpu_tree.utils.compat import HAVE_SKLEARN, ParameterNamesOnce


@pytest.mark.parametrize(
    "estimator_class", [gpu_tree.DecisionTreeClassifier, gpu_tree.DecisionTreeRegressor]
)
def test_parameter_names_are_the_constructors(estimator_class):
    import inspect

    signature = inspect.signature(estimator_class.__init__)
    expected = sorted(name for name in signature.parameters if name != "self")
    assert estimator_class._get_param_names() == expected
    model = estimator_class(max_depth=3)
    assert model.get_params()["max_depth"] == 3
    assert set(model.get_params()) == set(expected)


def test_a_subclass_with_parameters_of_its_own_gets_its_own_names():
    class Deeper(gpu_tree.DecisionTreeClassifier):
        def __init__(self, extra=1, **params):
            super().__init__(**params)
            self.extra = extra

    # **params (a VAR_KEYWORD) is not a name: scikit-learn's rule, kept.
    assert Deeper._get_param_names() == ["extra"]
    assert "max_depth" in gpu_tree.DecisionTreeClassifier._get_param_names()
    assert Deeper(extra=5).get_params() == {"extra": 5}


def test_the_returned_names_are_a_fresh_list_each_time():
    names = gpu_tree.DecisionTreeClassifier._get_param_names()
    names.append("not_a_parameter")
    assert "not_a_parameter" not in gpu_tree.DecisionTreeClassifier._get_param_names()


@pytest.mark.skipif(not HAVE_SKLEARN, reason="scikit-learn's clone")
def test_clone_and_set_params_work_with_the_names_read_once():
    from sklearn.base import clone

    model = gpu_tree.DecisionTreeRegressor(min_samples_leaf=4)
    copy = clone(model).set_params(max_depth=2)
    assert copy.get_params()["min_samples_leaf"] == 4 and copy.max_depth == 2
    assert issubclass(gpu_tree.DecisionTreeRegressor, ParameterNamesOnce)
