"""Ensembles of gpu_tree's trees: random forests whose trees grow together."""

from gpu_tree.ensemble.forest import RandomForestClassifier, RandomForestRegressor

__all__ = ["RandomForestClassifier", "RandomForestRegressor"]
