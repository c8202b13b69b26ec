"""One load run and what it measures: the run options and the native engine (run.py), its
Result, the /proc sampler, the servers loadbench starts, the load gate, and the arithmetic every
figure is defined by (analysis.py). Nothing here knows about sweeps or reports."""
