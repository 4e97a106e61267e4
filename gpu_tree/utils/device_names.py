"""The devices an estimator's ``device`` parameter names: a module of names only, so that
the parameter table (and the command line that reads it) need not import the backends."""

DEVICES = ("auto", "cpu", "cuda")
