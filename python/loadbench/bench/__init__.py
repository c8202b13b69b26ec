"""What the benchmark drivers (bench/*.py) stand on: the external load tools and how to read
them, the peers of the registry (bench/peers/peers.toml) launched and sampled, the quiet-machine
gate, JSONL records, the environment block and the reports of the comparisons.

The top layer of the package: it may import loadbench.core, loadbench.sweep and
loadbench.report; nothing in the package imports it. The drivers are thin scripts over it, and
the tests import it like any other module (no sys.path edits).

  checkout          where the drivers find bench/peers and reports/
  child             a pinned child process with its own CPU time (wait4's rusage)
  generators        one adapter per load tool (wrk, h2load, hey, bombardier, oha, ab, loadbench)
  syscalls          `strace -c` tables read into calls by name
  tcp_counters      the kernel's TCP counters (what `nstat` shows), per new connection
  peers             registry peers launched for a driver, under a report label, with a sampler
  gate              the load gate and the outside-CPU rule, as a sweep applies them
  repeats           median and spread of a cell's repeats
  jsonl             one JSON record a line, written as each measurement ends, and read back
  environment_block the environment block every bench report opens with
  report_text       the report head, the ours-vs-theirs headline sentence, writing a report
  server_comparison, server_comparison_h2      bench/server_vs_peers.py
  generator_comparison, generator_comparison_report, perf_profiles, handshake_proof
                                               bench/generator_vs_peers.py
"""
