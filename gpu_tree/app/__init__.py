"""The application layer: the ``gputree`` command line, reading data files, metrics and
the benchmark. It uses the estimators and the model; nothing in the library imports it."""
