//! The real-time emulator: two TUN devices, one [`LinkModel`], one thread.
//!
//! Protocol with the orchestrator (python/cclab/kernel/backend.py):
//! 1. start `cclab-link emulate --ir resolved.json --snd-netns P --rcv-netns Q --out DIR`;
//! 2. the emulator creates TUN device `--dev` in both namespaces and prints
//!    `ready` on stdout;
//! 3. the orchestrator configures the devices (addresses, MTU, txqueuelen, up)
//!    and writes `start <t0>` on stdin, `t0` being the run's time zero on
//!    CLOCK_MONOTONIC;
//! 4. the emulator forwards packets until SIGTERM, sampling at
//!    t0 + k·interval (k = 1 … ⌊duration/interval⌋) into `DIR/link.csv` and
//!    `DIR/link_flows.csv`; on SIGTERM it writes `DIR/emulator.json`
//!    (lateness percentiles, counters, settings) and exits 0.

use crate::config::{self, Capacity as IrCapacity, Ir};
use crate::model::{Capacity, Delivery, Dir, FlowPath, LinkModel, LinkParams, LossModel, RateSteps, Trace};
use crate::stats::Lateness;
use crate::sys;
use std::fs::File;
use std::io::{self, BufRead, BufWriter, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

pub struct EmulatorArgs {
    pub ir_path: String,
    pub snd_netns: String,
    pub rcv_netns: String,
    pub dev: String,
    pub out_dir: String,
    /// Sleep only when the next deadline is further away than this (ns); closer ones are busy-polled.
    pub spin_ns: u64,
    /// SCHED_FIFO priority (0: stay in the normal scheduling class).
    pub rt_prio: i32,
}

/// Build the model's parameters from the IR, with the run's time zero `t0`.
pub fn link_params(ir: &Ir, t0: u64) -> Result<LinkParams, String> {
    let l = &ir.link;
    let capacity = match &l.capacity {
        IrCapacity::Constant { rate_bps } => {
            let changes = l.schedule.iter().filter_map(|c| c.rate_bps.map(|r| (t0 + c.at_ns, r))).collect();
            Capacity::Rate(RateSteps::new(*rate_bps, changes))
        }
        IrCapacity::Trace { opportunities_ns, period_ns, bytes_per_opportunity, .. } => {
            Capacity::Trace(Trace::new(t0, opportunities_ns.clone(), *period_ns, *bytes_per_opportunity)?)
        }
    };
    let mut delay_steps = vec![(0, l.delay_ns)];
    delay_steps.extend(l.schedule.iter().filter_map(|c| c.delay_ns.map(|d| (t0 + c.at_ns, d))));
    let mut loss_steps = vec![(0, LossModel::from_config(&l.loss))];
    loss_steps.extend(l.schedule.iter().filter_map(|c| c.loss.as_ref().map(|x| (t0 + c.at_ns, LossModel::from_config(x)))));
    let flows: Vec<FlowPath> = ir
        .flows
        .iter()
        .map(|f| FlowPath { access_delay_ns: (f.rtt_ns / 2).saturating_sub(l.delay_ns), ack_delay_ns: f.rtt_ns / 2 })
        .collect();
    let min_half_rtt = ir.flows.iter().map(|f| f.rtt_ns / 2).min().unwrap_or(l.delay_ns);
    Ok(LinkParams {
        capacity,
        delay_steps,
        loss_steps,
        limit_bytes: l.buffer.bytes,
        limit_packets: l.buffer.packets,
        flows,
        other: FlowPath { access_delay_ns: min_half_rtt.saturating_sub(l.delay_ns), ack_delay_ns: min_half_rtt },
        seed: ir.seed,
    })
}

struct Io {
    snd: OwnedFd,
    rcv: OwnedFd,
    pool: Vec<Vec<u8>>,
    lateness: Lateness,
    interval_late_max: u64,
    write_errors: u64,
    data_written_bytes: u64,
}

impl Io {
    fn deliver(&mut self, d: Delivery<Vec<u8>>) {
        match d {
            Delivery::Deliver { dir, due, pkt } => {
                let fd: RawFd = if dir == Dir::Data { self.rcv.as_raw_fd() } else { self.snd.as_raw_fd() };
                let late = sys::mono_ns().saturating_sub(due);
                self.lateness.record(late);
                self.interval_late_max = self.interval_late_max.max(late);
                match sys::write_fd(fd, &pkt) {
                    Ok(_) => {
                        if dir == Dir::Data {
                            self.data_written_bytes += pkt.len() as u64;
                        }
                    }
                    Err(_) => self.write_errors += 1,
                }
                self.pool.push(pkt);
            }
            Delivery::Drop(pkt) => self.pool.push(pkt),
        }
    }
}

fn flow_of(pkt: &[u8], data: bool, n: usize) -> Option<u32> {
    if pkt.len() < 20 || pkt[0] >> 4 != 4 {
        return None;
    }
    let off = if data { 12 } else { 16 };
    config::flow_of_addr([pkt[off], pkt[off + 1], pkt[off + 2], pkt[off + 3]], n)
}

pub fn run(args: &EmulatorArgs) -> Result<(), String> {
    let text = std::fs::read_to_string(&args.ir_path).map_err(|e| format!("{}: {e}", args.ir_path))?;
    let ir = Ir::from_json(&text)?;
    let mask = sys::install_stop_signals();
    sys::die_with_parent();
    sys::set_timer_slack_1ns();
    let rt = if args.rt_prio > 0 { sys::set_realtime(args.rt_prio).map(|_| args.rt_prio).unwrap_or(0) } else { 0 };
    let snd = sys::open_tun_in(&args.snd_netns, &args.dev).map_err(|e| e.to_string())?;
    let rcv = sys::open_tun_in(&args.rcv_netns, &args.dev).map_err(|e| e.to_string())?;
    println!("ready");
    io::stdout().flush().ok();
    let mut line = String::new();
    io::stdin().lock().read_line(&mut line).map_err(|e| e.to_string())?;
    let t0: u64 = line
        .strip_prefix("start ")
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| format!("expected 'start <t0_ns>' on stdin, got {line:?}"))?;

    let params = link_params(&ir, t0)?;
    let n_flows = ir.flows.len();
    let mut model: LinkModel<Vec<u8>> = LinkModel::new(params);
    let out = |name: &str| -> Result<BufWriter<File>, String> {
        let p = format!("{}/{name}", args.out_dir);
        File::create(&p).map(BufWriter::new).map_err(|e| format!("{p}: {e}"))
    };
    let mut link_csv = out("link.csv")?;
    let mut flows_csv = out("link_flows.csv")?;
    writeln!(link_csv, "time_ns,queue_bytes,queue_packets,sojourn_sum_ns,departed_packets,egress_bytes,arrival_bytes,drops_overflow,drops_random,drops_aqm,capacity_bps,delay_ns,lateness_max_ns,data_written_bytes,write_errors").ok();
    writeln!(flows_csv, "time_ns,flow_id,egress_bytes,arrival_bytes,drops").ok();

    let mut io = Io { snd, rcv, pool: Vec::new(), lateness: Lateness::default(), interval_late_max: 0, write_errors: 0, data_written_bytes: 0 };
    let interval = ir.sample_interval_ns;
    let n_samples = ir.duration_ns / interval;
    let mut k: u64 = 1;
    let mut scratch = vec![0u8; 65536];
    let (mut non_ip, mut wakeups, mut reads) = (0u64, 0u64, 0u64);
    let cpu0 = sys::process_cpu_ns();
    let wall0 = sys::mono_ns();
    let mut fds = [
        libc::pollfd { fd: io.snd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: io.rcv.as_raw_fd(), events: libc::POLLIN, revents: 0 },
    ];

    while !sys::stop_requested() {
        let now = sys::mono_ns();
        // samples due: the model's state exactly at t0 + k·interval
        while k <= n_samples && t0 + k * interval <= now {
            let t = t0 + k * interval;
            model.advance(t, &mut |d| io.deliver(d));
            let c = &model.counters;
            writeln!(
                link_csv,
                "{},{},{},{},{},{},{},{},{},0,{},{},{},{},{}",
                k * interval,
                model.queue_bytes(),
                model.queue_packets(),
                c.sojourn_sum_ns,
                c.departed_packets,
                c.egress_bytes,
                c.arrival_bytes,
                c.drops_overflow,
                c.drops_random,
                model.capacity().sample_bps(t - interval, t),
                model.delay_at(t),
                io.interval_late_max,
                io.data_written_bytes,
                io.write_errors
            )
            .ok();
            for (i, f) in model.flow_counters.iter().enumerate() {
                writeln!(flows_csv, "{},{},{},{},{}", k * interval, i, f.egress_bytes, f.arrival_bytes, f.drops).ok();
            }
            io.interval_late_max = 0;
            k += 1;
        }
        // read everything waiting on both sides, stamped with the time we read it
        for (side, data) in [(0usize, true), (1usize, false)] {
            let fd = if side == 0 { io.snd.as_raw_fd() } else { io.rcv.as_raw_fd() };
            for _ in 0..512 {
                match sys::read_fd(fd, &mut scratch) {
                    Ok(len) if len > 0 => {
                        reads += 1;
                        let stamp = sys::mono_ns();
                        let mut buf = io.pool.pop().unwrap_or_default();
                        buf.clear();
                        buf.extend_from_slice(&scratch[..len]);
                        let flow = flow_of(&buf, data, n_flows);
                        if buf[0] >> 4 != 4 {
                            non_ip += 1;
                        }
                        if data {
                            model.on_data(stamp, flow, len as u32, buf);
                        } else {
                            model.on_ack(stamp, flow, buf);
                        }
                    }
                    _ => break,
                }
            }
        }
        let now = sys::mono_ns();
        model.advance(now, &mut |d| io.deliver(d));
        // sleep until the next thing is due (or a packet arrives)
        let mut deadline = model.next_event().unwrap_or(u64::MAX);
        if k <= n_samples {
            deadline = deadline.min(t0 + k * interval);
        }
        let now = sys::mono_ns();
        if deadline <= now + args.spin_ns {
            continue;
        }
        let timeout = if deadline == u64::MAX { Some(100_000_000) } else { Some((deadline - now).min(100_000_000)) };
        wakeups += 1;
        sys::ppoll(&mut fds, timeout, &mask).map_err(|e| format!("ppoll: {e}"))?;
    }

    let wall = sys::mono_ns() - wall0;
    let cpu = sys::process_cpu_ns() - cpu0;
    link_csv.flush().ok();
    flows_csv.flush().ok();
    let c = &model.counters;
    let l = &io.lateness;
    let report = serde_json::json!({
        "emulator": "cclab-link",
        "version": crate::VERSION,
        "settings": {
            "dev": args.dev, "spin_ns": args.spin_ns, "sched_fifo_priority": rt, "timer_slack_ns": 1,
            "queue": "drop-tail; a packet counts until its last bit is serialized",
            "byte_convention": "IP datagram length (IP+TCP headers+payload, no L2 framing)",
            "buffer_bytes": ir.link.buffer.bytes, "buffer_packets": ir.link.buffer.packets,
        },
        "lateness_ns": {
            "count": l.count(), "mean": l.mean_ns(), "p50": l.quantile_ns(0.5), "p90": l.quantile_ns(0.9),
            "p99": l.quantile_ns(0.99), "p999": l.quantile_ns(0.999), "max": l.max_ns(),
        },
        "counters": {
            "data_in": c.data_in, "data_out": c.data_out, "ack_in": c.ack_in, "ack_out": c.ack_out,
            "arrival_packets": c.arrival_packets, "departed_packets": c.departed_packets,
            "drops_overflow": c.drops_overflow, "drops_random": c.drops_random,
            "queued_packets": model.queue_packets(), "in_delay_lines": model.in_flight_packets(),
            "egress_bytes": c.egress_bytes, "data_written_bytes": io.data_written_bytes,
            "write_errors": io.write_errors, "non_ipv4": non_ip, "reads": reads, "wakeups": wakeups,
        },
        "samples_written": k - 1,
        "cpu_ns": cpu, "wall_ns": wall,
    });
    let p = format!("{}/emulator.json", args.out_dir);
    std::fs::write(&p, serde_json::to_string_pretty(&report).unwrap()).map_err(|e| format!("{p}: {e}"))?;
    Ok(())
}
