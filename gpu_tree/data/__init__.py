"""Input data for training and prediction: validation, categorical encoding, binning, and
the layout of the statistics that histograms sum."""
