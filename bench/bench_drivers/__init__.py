"""What the benchmark drivers (bench/*.py) stand on: the external load tools and how to read
them, the peers of the registry (bench/peers/peers.toml) launched and sampled, the quiet-machine
gate, JSONL records, the environment block and the reports of the comparisons.

It lives in the checkout, not in the loadbench wheel: every driver needs the checkout's
bench/peers/peers.toml and writes into its reports/, which an installed package does not have.
It imports the installed product as any user does (loadbench, loadbench.core, .sweep, .report,
.slo); nothing in loadbench imports it. The scripts find it as their neighbour (Python puts a
script's own folder, bench/, first on sys.path), the tests through pytest's `pythonpath = ["bench"]`
(pyproject.toml), neither with sys.path edits.

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
  h3_generator_cost                            bench/h3_generator_cost.py
  h3_handshakes                                bench/h3_handshakes.py
  open_loop_check                              bench/open_loop_vs_wrk2.py
  server_state                                 bench/server_state.py
"""
