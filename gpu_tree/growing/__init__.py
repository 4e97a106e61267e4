"""Growing a tree: split criteria, the split search over histograms, and the grower that
drives a backend level by level (or best-first)."""
