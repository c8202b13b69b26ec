# puma's settings for the Ruby peer. PUMA_WORKERS (the sweep's worker count): 1 -> puma's single
# mode, one process (one core under the GVL, like the other one-worker peers); N > 1 -> cluster
# mode, N forked worker processes under a master. Threads: puma's own default for MRI (0 to 5
# per process), said here so the report's reader need not know it.
count = Integer(ENV.fetch("PUMA_WORKERS", "1"))
workers(count > 1 ? count : 0)
threads 0, 5
environment "production"
quiet
