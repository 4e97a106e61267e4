"""Compute backends: the CPU (numpy, numba) and CUDA (CuPy, numba.cuda) implementations
of histograms, sibling subtraction and row partitioning that the grower drives."""
