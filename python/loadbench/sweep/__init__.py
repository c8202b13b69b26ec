"""A matrix of servers x workloads x loads x protocols x repeats: the sweep's config and plan,
the peer registry (targets.py), the runner that measures it cell by cell, and the results
folder it writes (sweep.json, environment.json, results.jsonl)."""
