"""The fitted model: the tree's arrays and its walk, pruning, export (text, DOT, plot)
and the versioned JSON model file."""
