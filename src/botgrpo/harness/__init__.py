"""The comparison harness: warm start, evaluation, method x seed runs, summaries and plots."""
