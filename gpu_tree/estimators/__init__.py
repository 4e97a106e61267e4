"""Estimators: scikit-learn's interface over the training pipeline."""

from gpu_tree.estimators.tree import DecisionTreeClassifier, DecisionTreeRegressor

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor"]
