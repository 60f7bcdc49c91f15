//! CPU accounting from `/proc`: what the machine and each group of processes (the service, Postgres,
//! NATS, the load generator) spent during a phase, per operation.

use crate::harness::SERVICE_PID;
use std::sync::atomic::Ordering;

/// CPU time the machine and its processes spent during one phase, read from `/proc` (Linux only;
/// elsewhere nothing is printed). CPU per operation is steadier than operations per second on a virtual
/// machine whose speed swings: it tells whether a change made each write cheaper even when a run's
/// throughput is lost in the noise.
#[derive(Clone, Default)]
pub struct CpuTimes {
    /// Clock ticks spent working (user, nice, system, irq, softirq) by the whole machine.
    busy: u64,
    /// Clock ticks the hypervisor gave to others while this machine wanted to run.
    steal: u64,
    /// All clock ticks of every core.
    total: u64,
    /// Clock ticks (user and system) of each process of a group (see [`CPU_GROUPS`]), by pid.
    processes: std::collections::HashMap<u32, (usize, u64)>,
}

const CPU_GROUPS: [&str; 4] = ["service", "postgres", "nats", "load"];
/// Linux reports process times in USER_HZ, 100 per second on every mainstream architecture.
const TICKS_PER_SECOND: f64 = 100.0;

pub fn cpu_times() -> Option<CpuTimes> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat.lines().next()?.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    let field = |i: usize| fields.get(i).copied().unwrap_or(0);
    // user nice system idle iowait irq softirq steal
    let busy = field(0) + field(1) + field(2) + field(5) + field(6);
    let steal = field(7);
    let mut times = CpuTimes { busy, steal, total: busy + steal + field(3) + field(4), ..CpuTimes::default() };
    let me = std::process::id();
    let service = Some(SERVICE_PID.load(Ordering::Relaxed)).filter(|pid| *pid != 0);
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let (Some(open), Some(close)) = (text.find('('), text.rfind(')')) else { continue };
        let group = match &text[open + 1..close] {
            _ if pid == me => 3,
            _ if Some(pid) == service => 0,
            "postgres" => 1,
            "nats-server" => 2,
            _ => continue,
        };
        // After the command: state, ppid, ... utime is the 12th field, stime the 13th.
        let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
        let ticks = |i: usize| rest.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
        times.processes.insert(pid, (group, ticks(11) + ticks(12)));
    }
    Some(times)
}

/// "cpu per create: …" for the phase between `before` and now, `operations` done in it: the machine's
/// total, and with `by_process` each group's share. A process that ended during the phase (a pgbench
/// connection's backend) counts in the machine's total only, so pgbench phases print that alone.
pub fn cpu_line(before: &Option<CpuTimes>, operations: u64, what: &str, by_process: bool) -> String {
    let (Some(before), Some(after)) = (before, cpu_times()) else { return String::new() };
    if operations == 0 {
        return String::new();
    }
    let per_op = |ticks: u64| ticks as f64 / TICKS_PER_SECOND * 1e6 / operations as f64;
    let mut groups = [0u64; CPU_GROUPS.len()];
    for (pid, (group, ticks)) in &after.processes {
        let earlier = before.processes.get(pid).map_or(0, |(_, t)| *t);
        groups[*group] += ticks.saturating_sub(earlier);
    }
    let groups: Vec<String> =
        CPU_GROUPS.iter().zip(groups).map(|(name, ticks)| format!("{name} {:.0}", per_op(ticks))).collect();
    let groups = if by_process { format!(" (of which {})", groups.join(", ")) } else { String::new() };
    let total = after.total.saturating_sub(before.total).max(1) as f64;
    format!(
        "cpu per {what}: {:.0} µs{groups}; machine busy {:.0}%, steal {:.0}%",
        per_op(after.busy.saturating_sub(before.busy)),
        after.busy.saturating_sub(before.busy) as f64 * 100.0 / total,
        after.steal.saturating_sub(before.steal) as f64 * 100.0 / total,
    )
}

/// CPU of the service, Postgres and NATS together per operation (µs) between `before` and now: what a
/// write costs the deployment, without the load generator.
pub fn deployment_cpu_per_op(before: &Option<CpuTimes>, operations: u64) -> Option<f64> {
    let (Some(before), Some(after)) = (before, cpu_times()) else { return None };
    let mut ticks = 0;
    for (pid, (group, now)) in &after.processes {
        if *group < 3 {
            ticks += now.saturating_sub(before.processes.get(pid).map_or(0, |(_, t)| *t));
        }
    }
    (operations > 0).then(|| ticks as f64 / TICKS_PER_SECOND * 1e6 / operations as f64)
}
