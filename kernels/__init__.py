"""Kernel source of gpu_tree, installed as the subpackage ``gpu_tree.kernels``.

``cpu``: numba CPU hot loops (binning, histograms, partition, exact-mode statistics,
prediction). The CUDA kernels live beside them and share their layout conventions.
"""
