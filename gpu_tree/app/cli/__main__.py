"""``python -m gpu_tree.app.cli``: the command line where no console script is installed."""

from gpu_tree.app.cli import main

if __name__ == "__main__":  # pragma: no cover
    main()
