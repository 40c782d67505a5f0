//! The real-time emulator of a topology (docs/topologies.md, docs/kernel.md
//! "Topologies"): one TUN device per host namespace, one thread for all of
//! them — the links a flow's data crosses may also carry another flow's
//! ACKs, so every link is one model driven from one loop (`model::net`).
//!
//! Protocol with the orchestrator, as `emulate`'s: create the devices, print
//! `ready`, wait for `start <t0>` on stdin, forward until SIGTERM, sampling
//! at t0 + k·interval into `DIR/link.csv` (one row per link per sample, with
//! `link_id`) and `DIR/link_flows.csv`, then write `DIR/emulator.json`.
//!
//! A packet read from host h is data of flow i when its IPv4 source is flow
//! i's sender address, an ACK of flow i when its destination is; it enters
//! the model if it came from the host the flow's data (resp. ACKs) leaves,
//! anything else is counted as stray and dropped.

use crate::config::{self, Capacity as IrCapacity, Ir};
use crate::ecn;
use crate::model::{NetDelivery, NetFlow, NetModel, NetParams};
use crate::rwnd::WindowClamp;
use crate::stats::Lateness;
use crate::sys;
use cclab_netmodel::ir::{link_seed, split_extra_delay};
use std::fs::File;
use std::io::{self, BufRead, BufWriter, Write};
use std::os::fd::{AsRawFd, OwnedFd};

pub struct TopoArgs {
    pub ir_path: String,
    /// (node, namespace path) of every host, in the order of `Ir::hosts`.
    pub hosts: Vec<(String, String)>,
    pub dev: String,
    pub out_dir: String,
    pub spin_ns: u64,
    pub rt_prio: i32,
}

/// The model's parameters from the IR, with the run's time zero `t0` (the
/// same per-link rules as the one-link emulator: loss and schedules from
/// t0, a trace at phase 0 at t0 and already running before it).
pub fn net_params(ir: &Ir, t0: u64) -> Result<NetParams, String> {
    let hosts = ir.hosts()?;
    let mut links = Vec::with_capacity(ir.links.len());
    for (k, l) in ir.links.iter().enumerate() {
        let origin = match &l.capacity {
            IrCapacity::Trace { period_ns, .. } => crate::emulator::trace_origin(*period_ns, t0),
            IrCapacity::Constant { .. } => t0,
        };
        links.push(l.params(link_seed(ir.seed, k), t0, origin)?);
    }
    let mut flows = Vec::with_capacity(ir.flows.len());
    for f in &ir.flows {
        let path = f
            .path
            .iter()
            .map(|n| ir.link_index(n))
            .collect::<Result<Vec<_>, _>>()?;
        let ack_path = f
            .ack_path
            .iter()
            .map(|n| ir.link_index(n))
            .collect::<Result<Vec<_>, _>>()?;
        let delay = |p: &[usize]| p.iter().map(|&k| ir.links[k].delay_ns).sum::<u64>();
        let (fwd, back) =
            split_extra_delay(f.rtt_ns, delay(&path), delay(&ack_path)).ok_or_else(|| {
                format!(
                    "resolved IR: flows[{}].rtt_ns is below its links' delay",
                    f.id
                )
            })?;
        let (a, b) = ir.flow_nodes(f)?;
        let host = |n: &String| hosts.iter().position(|h| h == n).unwrap();
        flows.push(NetFlow {
            path,
            ack_path,
            fwd_extra_ns: fwd,
            ack_extra_ns: back,
            src_host: host(&a),
            dst_host: host(&b),
        });
    }
    Ok(NetParams { links, flows })
}

struct Writer {
    fds: Vec<OwnedFd>,
    pool: Vec<Vec<u8>>,
    lateness: Lateness,
    interval_late_max: u64,
    write_errors: u64,
    written_bytes: u64,
}

impl Writer {
    fn deliver(&mut self, d: NetDelivery<Vec<u8>>) {
        match d {
            NetDelivery::Deliver {
                host,
                due,
                mut pkt,
                ce,
                ..
            } => {
                if ce {
                    ecn::set_ce_ipv4(&mut pkt);
                }
                let late = sys::mono_ns().saturating_sub(due);
                self.lateness.record(late);
                self.interval_late_max = self.interval_late_max.max(late);
                match sys::write_fd(self.fds[host].as_raw_fd(), &pkt) {
                    Ok(_) => self.written_bytes += pkt.len() as u64,
                    Err(_) => self.write_errors += 1,
                }
                self.pool.push(pkt);
            }
            NetDelivery::Drop { pkt, .. } => self.pool.push(pkt),
        }
    }
}

fn addr(pkt: &[u8], off: usize) -> [u8; 4] {
    [pkt[off], pkt[off + 1], pkt[off + 2], pkt[off + 3]]
}

pub fn run(args: &TopoArgs) -> Result<(), String> {
    let text =
        std::fs::read_to_string(&args.ir_path).map_err(|e| format!("{}: {e}", args.ir_path))?;
    let ir = Ir::from_json(&text)?;
    let hosts = ir.hosts()?;
    if hosts.len() > config::MAX_HOSTS {
        return Err(format!(
            "{} hosts; at most {}",
            hosts.len(),
            config::MAX_HOSTS
        ));
    }
    let given: Vec<&String> = args.hosts.iter().map(|(n, _)| n).collect();
    if given != hosts.iter().collect::<Vec<_>>() {
        return Err(format!(
            "--hosts lists {given:?}; the IR's hosts are {hosts:?}"
        ));
    }
    let mask = sys::install_stop_signals();
    sys::die_with_parent();
    let mut fds = Vec::with_capacity(hosts.len());
    for (node, ns) in &args.hosts {
        fds.push(sys::open_tun_in(ns, &args.dev).map_err(|e| format!("host {node}: {e}"))?);
    }
    println!("ready");
    io::stdout().flush().ok();
    let mut line = String::new();
    io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let t0: u64 = line
        .strip_prefix("start ")
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| format!("expected 'start <t0_ns>' on stdin, got {line:?}"))?;

    let params = net_params(&ir, t0)?;
    let flows = params.flows.clone();
    let mut model: NetModel<Vec<u8>> = NetModel::new(params);
    let n_flows = ir.flows.len();
    let create = |name: &str| -> Result<BufWriter<File>, String> {
        let p = format!("{}/{name}", args.out_dir);
        File::create(&p)
            .map(BufWriter::new)
            .map_err(|e| format!("{p}: {e}"))
    };
    let mut link_csv = create("link.csv")?;
    let mut flows_csv = create("link_flows.csv")?;
    writeln!(link_csv, "time_ns,link_id,queue_bytes,queue_packets,sojourn_sum_ns,departed_packets,egress_bytes,arrival_bytes,drops_overflow,drops_random,drops_aqm,marks_ce,capacity_bps,delay_ns,lateness_max_ns,busy_ns").ok();
    writeln!(
        flows_csv,
        "time_ns,flow_id,egress_bytes,arrival_bytes,drops"
    )
    .ok();
    let (interval, n_samples) = (
        ir.sample_interval_ns,
        ir.duration_ns / ir.sample_interval_ns,
    );
    let mut k = 1u64;

    sys::set_timer_slack_1ns();
    let rt = if args.rt_prio > 0 {
        sys::set_realtime(args.rt_prio)
            .map(|_| args.rt_prio)
            .unwrap_or(0)
    } else {
        0
    };
    let wall0 = sys::mono_ns();
    let cpu0 = sys::process_cpu_ns();
    let mut clamp = WindowClamp::new(ir.flows.iter().map(|f| f.rwnd_bytes).collect());
    let mut out = Writer {
        fds,
        pool: Vec::new(),
        lateness: Lateness::default(),
        interval_late_max: 0,
        write_errors: 0,
        written_bytes: 0,
    };
    let mut pollfds: Vec<libc::pollfd> = out
        .fds
        .iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut wakeup = Lateness::default();
    let mut scratch = vec![0u8; 65536];
    let (mut reads, mut wakeups, mut non_ip, mut stray) = (0u64, 0u64, 0u64, 0u64);
    while !sys::stop_requested() {
        let now = sys::mono_ns();
        while k <= n_samples && t0 + k * interval <= now {
            let t = t0 + k * interval;
            model.advance(t, &mut |d| out.deliver(d));
            for j in 0..model.n_links() {
                let l = model.link(j);
                let c = &l.counters;
                writeln!(
                    link_csv,
                    "{},{j},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                    k * interval,
                    l.queue_bytes(),
                    l.queue_packets(),
                    c.sojourn_sum_ns,
                    c.departed_packets,
                    c.egress_bytes,
                    c.arrival_bytes,
                    c.drops_overflow,
                    c.drops_random,
                    c.drops_aqm,
                    c.marks_ce,
                    l.capacity().sample_bps(t - interval, t) as u64,
                    l.delay_at(t),
                    out.interval_late_max,
                    l.busy_ns_at(t)
                )
                .ok();
            }
            for (i, f) in model.flow_counters.iter().enumerate() {
                writeln!(
                    flows_csv,
                    "{},{i},{},{},{}",
                    k * interval,
                    f.egress_bytes,
                    f.arrival_bytes,
                    f.drops
                )
                .ok();
            }
            out.interval_late_max = 0;
            k += 1;
        }
        for (h, pfd) in pollfds.iter().enumerate() {
            for _ in 0..256 {
                match sys::read_fd(pfd.fd, &mut scratch) {
                    Ok(len) if len > 0 => {
                        reads += 1;
                        let stamp = sys::mono_ns();
                        if len < 20 || scratch[0] >> 4 != 4 {
                            non_ip += 1;
                            continue;
                        }
                        let (src, dst) = (addr(&scratch, 12), addr(&scratch, 16));
                        let mut buf = out.pool.pop().unwrap_or_default();
                        buf.clear();
                        buf.extend_from_slice(&scratch[..len]);
                        if let Some(f) = config::flow_of_addr(src, n_flows)
                            .filter(|&f| flows[f as usize].src_host == h)
                        {
                            let ect = ecn::ipv4_ect(&buf);
                            model.on_data(stamp, f, len as u32, ect, buf);
                        } else if let Some(f) = config::flow_of_addr(dst, n_flows)
                            .filter(|&f| flows[f as usize].dst_host == h)
                        {
                            clamp.apply(f, &mut buf);
                            model.on_ack(stamp, f, len as u32, buf);
                        } else {
                            stray += 1;
                            out.pool.push(buf);
                        }
                    }
                    _ => break,
                }
            }
        }
        model.advance(sys::mono_ns(), &mut |d| out.deliver(d));
        let mut deadline = model.next_event().unwrap_or(u64::MAX);
        if k <= n_samples {
            deadline = deadline.min(t0 + k * interval);
        }
        let now = sys::mono_ns();
        if deadline <= now + args.spin_ns {
            continue; // busy-poll the last `spin_ns` before a deadline
        }
        // sleep until `spin_ns` before the deadline (emulator.rs `direction_loop`)
        let wake_at = deadline - args.spin_ns;
        let timeout = (wake_at - now).min(50_000_000);
        wakeups += 1;
        let ready =
            sys::ppoll(&mut pollfds, Some(timeout), &mask).map_err(|e| format!("ppoll: {e}"))?;
        if ready == 0 && timeout == wake_at - now {
            wakeup.record(sys::mono_ns().saturating_sub(wake_at));
        }
    }
    link_csv.flush().ok();
    flows_csv.flush().ok();
    let wall = sys::mono_ns() - wall0;
    let cpu = sys::process_cpu_ns() - cpu0;
    let q = |l: &Lateness| {
        serde_json::json!({"count": l.count(), "mean": l.mean_ns(), "p50": l.quantile_ns(0.5), "p90": l.quantile_ns(0.9),
                           "p99": l.quantile_ns(0.99), "p999": l.quantile_ns(0.999), "max": l.max_ns()})
    };
    let c = &model.counters;
    let sum = |get: fn(&cclab_netmodel::Counters) -> u64| {
        (0..model.n_links())
            .map(|j| get(&model.link(j).counters))
            .sum::<u64>()
    };
    let links: Vec<_> = ir
        .links
        .iter()
        .map(|l| serde_json::json!({"name": l.name, "from": l.from, "to": l.to, "qdisc": l.qdisc, "buffer_bytes": l.buffer.bytes, "buffer_packets": l.buffer.packets}))
        .collect();
    let report = serde_json::json!({
        "emulator": "cclab-link",
        "version": crate::VERSION,
        "source_hash": crate::SOURCE_HASH,
        "settings": {
            "mode": "topology", "hosts": args.hosts.iter().map(|(n, _)| n).collect::<Vec<_>>(), "links": links,
            "dev": args.dev, "spin_ns": args.spin_ns, "sched_fifo_priority": rt, "timer_slack_ns": 1,
            "threads": "one for every host device and link (data and ACKs may share a link)",
            "rwnd": "receiver's advertised window rewritten to min(advertised, rwnd_bytes) as it leaves the receiver's host",
            "queue": "a packet counts from its arrival until its serialization starts (cclab-netmodel)",
            "byte_convention": "IP datagram length (IP+TCP headers+payload, no L2 framing)",
        },
        "lateness_ns": q(&out.lateness),
        "wakeup_lateness_ns": q(&wakeup),
        "lateness_hist_ns": out.lateness.histogram(),
        "counters": {
            "data_in": c.data_in, "data_out": c.data_out, "data_dropped": c.data_dropped,
            "ack_in": c.ack_in, "ack_out": c.ack_out, "ack_dropped": c.ack_dropped,
            "arrival_packets": sum(|x| x.arrival_packets), "departed_packets": sum(|x| x.departed_packets),
            "drops_overflow": sum(|x| x.drops_overflow), "drops_random": sum(|x| x.drops_random),
            "drops_aqm": sum(|x| x.drops_aqm), "marks_ce": sum(|x| x.marks_ce),
            "queued_packets": model.held_packets(), "in_delay_lines": model.in_lines(),
            "egress_bytes": sum(|x| x.egress_bytes), "written_bytes": out.written_bytes,
            "write_errors": out.write_errors, "non_ipv4": non_ip, "stray": stray,
            "reads": reads, "wakeups": wakeups, "windows_clamped": clamp.rewritten,
        },
        "cpu_ns": cpu, "wall_ns": wall,
    });
    drop(out);
    let p = format!("{}/emulator.json", args.out_dir);
    std::fs::write(&p, serde_json::to_string_pretty(&report).unwrap())
        .map_err(|e| format!("{p}: {e}"))?;
    Ok(())
}
