"""The training pipeline: one fit, whatever the front end.

The tree estimators, the forests and ``gpu_tree.dask`` all run the same four stages,
each a module of this package:

1. :mod:`~gpu_tree.training.parameters`: every parameter declared once (type, range,
   check, documentation); ``check_settings`` checks those that need no data, and the
   table writes the estimators' docstrings and the command line's ranges.
2. :mod:`~gpu_tree.training.inputs`: ``prepare`` decides what X is (dense, sparse or on
   a GPU) once, learns and codes the categories, checks X, y and the weights, resolves
   the size parameters and codes the targets (:mod:`~gpu_tree.training.targets`). The
   estimator records what ``input_attributes`` says of the prepared input.
3. :mod:`~gpu_tree.training.binning`: what the split search reads (bins, or X itself
   for exact search).
4. :mod:`~gpu_tree.training.fit`: the backend, the grower, pruning.

A front end adds only what is its own: a forest its bootstrap samples and batches of
trees, a distributed fit its shards on the workers.
"""
