"""Foundations that every layer may use: optional scikit-learn base classes, progress
logging, atomic file writes. They import nothing else from gpu_tree."""
