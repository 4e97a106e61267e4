"""Model files: a fitted estimator as a versioned JSON document, and back.

A model file is data, never code: loading parses JSON and checks every field, array
length, index and the tree's shape before building an estimator, so a damaged or foreign
file gives a ``ValueError`` saying what is wrong, never a wrong model. Files are written
atomically: to a temporary file in the same folder, then renamed over the target, so a
reader never sees half a file.

A tree's node arrays, the bin edges and a forest's out-of-bag values are packed: typed binary,
compressed, as base64 text in the JSON (:mod:`gpu_tree.model.packed_arrays`): a fully
grown tree or forest takes 0.27 of the space of JSON lists and loads 5 to 9 times faster
(bench/RESULTS.md). ``model_document(estimator, packed=False)`` gives every array as a JSON
list instead, for a person or a script to read, and the loader reads either form in any
array. In a JSON list, floats are written with Python's shortest round-trip repr
(exact); infinities and NaN, which JSON lacks, as the strings "inf", "-inf" and "nan".
Version 1 is the layout below with every array a JSON list; it is still read.

Layout (format "gpu_tree.model", version 2)::

    {"format": "gpu_tree.model", "format_version": 2, "library_version": "...",
     "estimator": "DecisionTreeClassifier", "params": {...}, "device": "cpu",
     "n_features_in": 4, "feature_names_in": [...] | null,
     "classes": {"dtype": "<U3", "values": [...]} | null,
     "categorical": {"is_categorical": [...], "categories": [null | {"kind", "values"}]},
     "binning": null | {"max_bins": 256, "missing_bin": -1, "edges": [[...], ...]},
     "missing_in_training": [false, true, false, false] | null,
     "tree": {"node_count": 7, "n_features": 4, "n_classes": 2, "n_category_words": 1,
              "children_left": [...] | {"dtype", "count", "zlib_base64"}, ...,
              "value": ..., "category_bitsets": ..., "branch_children": ...}}

``missing_in_training`` (per feature: whether the training data had a missing value in
it) was added to version 1 without a new version number: prediction does not read it
(only the exports do, to mark where missing values go), so a reader that does not know
it loses nothing by skipping it. A file without it, or with null, loads as a model that
does not know: its exports mark missing values on every split.

Multi-output y was added to version 1 the same way, in fields that one-output files
leave out: the tree's ``n_outputs`` (``value`` then holds node_count x n_outputs x
n_classes numbers), a classifier tree's ``class_counts`` (each output's classes;
``n_classes`` the largest, ``value`` padded with zeros past an output's own), and
``classes`` as a list of one ``{"dtype", "values"}`` per output. A reader that does not
know them refuses such a file (its value array has the wrong length), never misreads it.

A forest (an estimator registered with ``tree_estimator``: RandomForestClassifier,
RandomForestRegressor) is one file of the same format and version: the fields above
that describe the input and what was learned from it (``n_features_in`` to
``missing_in_training``, shared by every tree) once, then ``forest`` and the trees'
arrays in a list, each as a single tree's ``tree``::

     ..., "missing_in_training": [...] | null,
     "forest": {"seed": 123, "n_batches": 1, "max_features": 2,
                "oob": null | {"score": 0.93, "n_samples": 150, "values": [...]}},
     "trees": [{"node_count": 7, ...}, {"node_count": 9, ...}, ...]}

``seed`` is the forest's seed of its bootstrap draws (``warm_start`` and the out-of-bag
rows of a later fit need it); ``max_features`` the trees' resolved ``max_features_``;
``oob`` the out-of-bag score and, row by row, ``oob_decision_function_`` (a classifier,
``n_samples`` x n_classes values) or ``oob_prediction_`` (a regressor). A gpu_tree that
knows no forest refuses such a file as an unknown estimator. The loader checks every
tree as it checks a single tree, and that the trees agree with each other and with the
forest: ``params.n_estimators`` trees, each of ``n_features_in`` features and of the
classes' number of outputs.

The modules, one job each: ``fields`` (the format's name and versions, and the
:class:`~gpu_tree.model.file_format.fields.Reader` every field is read through, which
names the field in every error), ``registry`` (the estimator classes a file may name),
``writing`` (an estimator to its document and file), ``reading`` (a file to its
estimator), ``checks`` (what the reader proves of a tree before prediction relies on it)
and ``labels`` (class labels checked against their dtype). Reading imports the checks;
writing imports no reading code but the Reader, which ``unpacked_document`` reads packed
arrays with.
"""
