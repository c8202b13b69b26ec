// Python face of the /proc sampler: converts ticks to seconds, releases the GIL around
// every /proc read so a snapshot never waits on Python threads (nor they on it).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings/registry.hpp"
#include "core/sampler/machine_processes.hpp"
#include "core/sampler/sampler.hpp"

namespace py = pybind11;
using loadbench::sampler::Sample;
using loadbench::sampler::Sampler;
using loadbench::sampler::Snapshot;

namespace loadbench::bindings {
namespace {

double ticks_to_s(std::uint64_t ticks) { return static_cast<double>(ticks) / sampler::clock_ticks_per_second(); }
double ns_to_s(std::uint64_t ns) { return static_cast<double>(ns) * 1e-9; }

py::dict machine_dict(const sampler::MachineCounters& m) {
    py::dict d;
    d["user_s"] = ticks_to_s(m.cpu.user);
    d["nice_s"] = ticks_to_s(m.cpu.nice);
    d["system_s"] = ticks_to_s(m.cpu.system);
    d["idle_s"] = ticks_to_s(m.cpu.idle);
    d["iowait_s"] = ticks_to_s(m.cpu.iowait);
    d["irq_s"] = ticks_to_s(m.cpu.irq);
    d["softirq_s"] = ticks_to_s(m.cpu.softirq);
    d["steal_s"] = ticks_to_s(m.cpu.steal);
    d["loadavg_1m"] = m.loadavg_1m;
    return d;
}

py::object allocations_dict(const std::optional<sampler::AllocationTotals>& totals) {
    if (!totals) return py::none();
    py::dict a;
    a["calls"] = totals->calls;
    a["frees"] = totals->frees;
    a["bytes"] = totals->bytes;
    a["pids"] = totals->pids;
    return a;
}

py::dict snapshot_dict(const Snapshot& s) {
    py::dict d;
    d["t"] = s.t;
    d["cpu_s"] = ns_to_s(s.cpu_ns);
    d["utime_s"] = ns_to_s(s.user_ns);
    d["stime_s"] = ns_to_s(s.system_ns);
    d["cpu_source"] = sampler::cpu_source_name(s.cpu_source);
    d["rss_kib"] = s.process.rss_kib;
    d["rss_peak_kib"] = s.process.rss_peak_kib;
    d["rss_max_kib"] = s.rss_max_kib;
    d["pss_kib"] = s.pss_kib >= 0 ? py::object(py::int_(s.pss_kib)) : py::object(py::none());
    d["fds"] = s.process.fds;
    d["threads"] = s.process.threads;
    d["ctx_voluntary"] = s.process.ctx_voluntary;
    d["ctx_involuntary"] = s.process.ctx_involuntary;
    d["pids"] = s.pids;
    d["exited"] = s.exited;
    d["machine"] = machine_dict(s.machine);
    d["allocations"] = allocations_dict(s.allocations);
    d["syscalls"] = s.syscalls ? py::object(py::int_(*s.syscalls)) : py::object(py::none());
    d["syscalls_na"] = s.syscalls ? py::object(py::none()) : py::object(py::str(s.syscalls_na));
    return d;
}

// One column per field: the time series becomes a DataFrame without a Python loop.
template <typename T, typename Get>
py::array_t<T> column(const std::vector<Sample>& rows, Get get) {
    py::array_t<T> out(static_cast<py::ssize_t>(rows.size()));
    auto view = out.template mutable_unchecked<1>();
    for (std::size_t i = 0; i < rows.size(); ++i) view(static_cast<py::ssize_t>(i)) = get(rows[i]);
    return out;
}

py::dict series_dict(const std::vector<Sample>& rows) {
    py::dict d;
    d["t"] = column<double>(rows, [](const Sample& s) { return s.t; });
    d["cpu_s"] = column<double>(rows, [](const Sample& s) { return ns_to_s(s.cpu_ns); });
    d["utime_s"] = column<double>(rows, [](const Sample& s) { return ns_to_s(s.user_ns); });
    d["stime_s"] = column<double>(rows, [](const Sample& s) { return ns_to_s(s.system_ns); });
    d["rss_kib"] = column<std::int64_t>(rows, [](const Sample& s) { return s.process.rss_kib; });
    d["rss_peak_kib"] = column<std::int64_t>(rows, [](const Sample& s) { return s.process.rss_peak_kib; });
    d["fds"] = column<std::int64_t>(rows, [](const Sample& s) { return s.process.fds; });
    d["threads"] = column<std::int64_t>(rows, [](const Sample& s) { return s.process.threads; });
    d["ctx_voluntary"] = column<std::int64_t>(rows, [](const Sample& s) { return s.process.ctx_voluntary; });
    d["ctx_involuntary"] = column<std::int64_t>(rows, [](const Sample& s) { return s.process.ctx_involuntary; });
    d["processes"] = column<std::int64_t>(rows, [](const Sample& s) { return s.processes; });
    d["exited"] = column<bool>(rows, [](const Sample& s) { return s.exited; });
    d["machine_user_s"] = column<double>(rows, [](const Sample& s) { return ticks_to_s(s.machine.cpu.user); });
    d["machine_nice_s"] = column<double>(rows, [](const Sample& s) { return ticks_to_s(s.machine.cpu.nice); });
    d["machine_system_s"] = column<double>(rows, [](const Sample& s) { return ticks_to_s(s.machine.cpu.system); });
    d["machine_idle_s"] = column<double>(rows, [](const Sample& s) { return ticks_to_s(s.machine.cpu.idle); });
    d["machine_iowait_s"] = column<double>(rows, [](const Sample& s) { return ticks_to_s(s.machine.cpu.iowait); });
    d["machine_irq_s"] = column<double>(rows, [](const Sample& s) { return ticks_to_s(s.machine.cpu.irq); });
    d["machine_softirq_s"] = column<double>(rows, [](const Sample& s) { return ticks_to_s(s.machine.cpu.softirq); });
    d["machine_steal_s"] = column<double>(rows, [](const Sample& s) { return ticks_to_s(s.machine.cpu.steal); });
    d["loadavg_1m"] = column<double>(rows, [](const Sample& s) { return s.machine.loadavg_1m; });
    return d;
}

}  // namespace

void register_sampler(py::module_& m) {
    m.def("clock_ticks_per_second", &sampler::clock_ticks_per_second);
    m.def(
        "cgroup_cpu_ns",
        [](const std::string& dir) -> py::object {
            // One reading of a cgroup's CPU usage (ns); None when it cannot be read.
            sampler::CgroupCpu cgroup;
            std::string why;
            std::vector<char> buffer(1024);
            if (!cgroup.open(dir, why)) return py::none();
            const auto usage = cgroup.read(buffer);
            if (!usage) return py::none();
            return py::int_(usage->usage_ns);
        },
        py::arg("dir"));
    m.def(
        "allocation_totals",
        [](const std::string& dir) {
            std::optional<sampler::AllocationTotals> totals;
            {
                py::gil_scoped_release release;
                totals = sampler::read_allocation_pages(dir);  // ValueError when unreadable
            }
            return allocations_dict(totals);
        },
        py::arg("dir"));
    m.def("machine_processes", [] {
        // [(pid, ppid, start_ticks, cpu_s, comm, kernel_thread)] of every process on the machine: the
        // two ends of an "other processes' CPU" measurement (loadbench.sampler.others_cpu).
        std::vector<sampler::ProcessCpu> processes;
        {
            py::gil_scoped_release release;
            std::vector<char> buffer(4096);
            processes = sampler::read_machine_processes(buffer);
        }
        py::list out;
        for (const auto& p : processes)
            out.append(py::make_tuple(p.pid, p.ppid, p.start_ticks, ns_to_s(p.cpu_ns), p.comm, p.kernel_thread));
        return out;
    });
    py::class_<Sampler>(m, "Sampler", "A process (tree) and the machine, read from /proc")
        .def(py::init<int, bool, const std::string&, const std::string&, bool, const std::string&>(), py::arg("pid"),
             py::arg("tree") = true, py::arg("cgroup") = std::string(), py::arg("allocation_dir") = std::string(),
             py::arg("count_syscalls") = true, py::arg("syscall_id_file") = std::string())
        .def_property_readonly("syscalls_na", &Sampler::syscalls_na)
        .def_property_readonly("allocation_dir", &Sampler::allocation_dir)
        .def_property_readonly("cgroup", &Sampler::cgroup_dir)
        .def_property_readonly("pid", &Sampler::pid)
        .def_property_readonly("tree", &Sampler::tree)
        .def_property_readonly("running", &Sampler::running)
        .def("snapshot",
             [](Sampler& self) {
                 Snapshot snap;
                 {
                     py::gil_scoped_release release;
                     snap = self.snapshot();
                 }
                 return snapshot_dict(snap);
             })
        .def("start", &Sampler::start, py::arg("interval_s"), py::call_guard<py::gil_scoped_release>())
        .def("stop", &Sampler::stop, py::call_guard<py::gil_scoped_release>())
        .def("series",
             [](const Sampler& self) {
                 std::vector<Sample> rows;
                 {
                     py::gil_scoped_release release;
                     rows = self.series();
                 }
                 return series_dict(rows);
             })
        .def("exit_time", &Sampler::exit_time)
        .def("sampling_thread_cpu_s", &Sampler::sampling_thread_cpu_s)
        .def("proc_listings", &Sampler::proc_listings);
}

}  // namespace loadbench::bindings
