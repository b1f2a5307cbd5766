"""The map of where BoT pays (``benchmarks/where_bot_pays.py``), one job per module:

- :mod:`paymap.settings`: every stored BoT-vs-GRPO comparison and its result;
- :mod:`paymap.diagnoses`: each setting's step-0 figures (diagnose, cached) and the first
  training step's figures of its kept runs;
- :mod:`paymap.rule`: the rule's thresholds read from the settings, and diagnose's advice held
  against what each comparison measured;
- :mod:`paymap.render`: the page's tables;
- :mod:`paymap.plot`: the plot.
"""
