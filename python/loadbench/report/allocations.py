"""report.md's "Heap allocations per request" section (a sweep with allocations = true): each
server's lowest allocs/req and bytes allocated/req per protocol family, its rank, and what the
figure covers - or why it is n/a. Every number is :meth:`Model.best_allocs`; this module only
lays it out (the per-cell figures are rows of the load tables)."""

from __future__ import annotations

from ..core import protocols
from ..core.allocation_sites import tidy_name
from .markdown import fmt_count, table
from .model import Model

FAMILIES = protocols.families()


def section(model: Model) -> list[str]:
    """The section's lines (empty when the sweep neither counted allocations nor recorded sites)."""
    if not model.counts_allocations():
        return sites_section(model)
    families = [(label, protos) for label, protos in FAMILIES if set(protos) & set(model.protocols)]
    best = {t: model.best_allocs(t) for t in model.listed}
    order = model.ranks(best, higher_is_better=False)
    header = ["Server"]
    for label, _ in families:
        header += [f"{label} allocs/req", f"{label} bytes/req"]
    header += ["Rank by allocs/req", "What the figure covers"]
    rows = []
    for t in model.listed:
        gap = model.allocation_gap(t)
        row = [t]
        for _, protos in families:
            calls = model.best_allocs(t, protos)
            nbytes = model.best_allocs(t, protos, metric="alloc_bytes_per_req")
            row += [fmt_count(calls) or "n/a", fmt_count(nbytes) or "n/a"]
        covers = f"n/a - {gap}" if gap and best[t] is None else model.allocator(t) or "libc malloc"
        row += [order[t].text() if t in order else "not ranked", covers]
        rows.append(row)
    return [
        "## Heap allocations per request",
        "",
        (
            "Each server ran with loadbench's allocation counter preloaded (`allocations = true`: "
            "LD_PRELOAD of libloadbench_alloc.so, inherited by every process of its tree). It counts "
            "the calls to libc's allocator - malloc, calloc, realloc, the memalign family, and so "
            "operator new - and the bytes they asked for, per thread, read at the edges of each "
            "window like the CPU. Per response: the window's calls / its exact responses. Each "
            "figure is the lowest median over the server's closed-loop cells of that protocol "
            "family (per cell: the allocs/req rows of the tables above); lower is better, ranked "
            "like CPU us/req. A realloc counts as one allocation (and one free). It cannot see a "
            "heap that is not libc's: a statically linked executable does not load the counter, "
            "and a runtime's own allocator (V8, pymalloc's small objects, a bundled jemalloc) is "
            "seen only where it asks libc for memory - the last column says what each figure "
            "covers, and a server the counter cannot see is n/a, not 0."
        ),
        "",
        table(header, rows),
        "",
    ] + sites_section(model)


SITES_SHOWN = 5


def sites_section(model: Model) -> list[str]:
    """Where each server allocates (allocation_sites = true): its top sites by calls."""
    found = model.allocation_sites()
    if not found:
        return []
    lines = [
        "## Where the allocations happen (heaptrack)",
        "",
        (
            "After its measured cells, each server ran once more on a fresh instance with heaptrack "
            "1.4 attached to every process of its tree, for one short closed-loop window (the "
            "protocol, workload and connections below). heaptrack records a stack per allocation and "
            "slows the server several times over, so this window's speed is not reported anywhere. A "
            "site is the first frame above the allocator (operator new and malloc's own frames "
            "skipped): function and file:line where the binary has debug information, else its "
            "module. Per response: the site's calls and requested bytes over the window's responses "
            "(the connections' setup included, after the attach). Top "
            f"{SITES_SHOWN} sites by calls; the top 25 are in allocation_sites.json."
        ),
        "",
    ]
    for target, block in found.items():
        head = (
            f"**{target}** ({block.get('protocol')}, {block.get('workload')}, "
            f"C = {block.get('connections')})"
        )
        if block.get("error"):
            lines += [f"{head}: not recorded - {block['error']}", ""]
            continue
        sites = block.get("sites") or []
        if not sites:
            lines += [
                f"{head}: heaptrack saw no allocation (a statically linked executable, or a heap that is not libc's)",
                "",
            ]
            continue
        lines += [
            f"{head}: {fmt_count(block['calls'] / block['responses']) if block.get('responses') else 'n/a'}"
            f" allocs/response over {block.get('responses', 0):,} responses",
            "",
            table(
                ["Function", "Where", "calls/req", "bytes/req"],
                [
                    [
                        f"`{tidy_name(s['function'])[:90]}`",
                        s["location"],
                        fmt_count(s["calls_per_req"]) or "n/a",
                        fmt_count(s["bytes_per_req"]) or "n/a",
                    ]
                    for s in sites[:SITES_SHOWN]
                ],
            ),
            "",
        ]
    return lines
