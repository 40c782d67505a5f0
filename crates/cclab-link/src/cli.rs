//! The `cclab-link` command line (subcommands below), shared by the
//! `cclab-link` binary (src/main.rs) and the Python extension, which runs it
//! as `python -m cclab._link …` (crates/cclab-py, `link_main`):
//!
//! * `emulate --ir FILE --snd-netns PATH --rcv-netns PATH --dev NAME --out DIR [--spin-ns N] [--rt-prio P]`
//! * `emulate-topo --ir FILE --hosts NODE=PATH,NODE=PATH… --dev NAME --out DIR [--spin-ns N] [--rt-prio P]`
//! * `send --ir FILE --netns PATH --t0 NS [--flows I,J…]`
//! * `recv --ir FILE --netns PATH --t0 NS --out FILE [--listen ADDR] [--read-latency FILE]`
//! * `version`
//!
//! It is started by python/cclab/kernel/backend.py, which creates the
//! namespaces and removes them afterwards; it is not meant to be run by hand.

use crate::config::Ir;
use crate::{emulator, topo, traffic};
use std::collections::HashMap;
use std::io::Write;

fn parse(args: &[String]) -> Result<HashMap<String, String>, String> {
    let mut m = HashMap::new();
    let mut it = args.iter();
    while let Some(k) = it.next() {
        let key = k
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected argument {k:?}"))?;
        let v = it.next().ok_or_else(|| format!("--{key} needs a value"))?;
        m.insert(key.to_string(), v.clone());
    }
    Ok(m)
}

fn get<'a>(m: &'a HashMap<String, String>, k: &str) -> Result<&'a str, String> {
    m.get(k)
        .map(|s| s.as_str())
        .ok_or_else(|| format!("missing --{k}"))
}

fn load_ir(m: &HashMap<String, String>) -> Result<Ir, String> {
    let p = get(m, "ir")?;
    Ir::from_json(&std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"))?)
}

fn t0(m: &HashMap<String, String>) -> Result<u64, String> {
    get(m, "t0")?
        .parse()
        .map_err(|_| "--t0 must be an integer (CLOCK_MONOTONIC ns)".to_string())
}

/// `--flows I,J…`: the flows a `send` drives (all when absent).
fn flows_arg(m: &HashMap<String, String>) -> Result<Option<Vec<u32>>, String> {
    m.get("flows")
        .map(|s| {
            s.split(',')
                .map(|x| {
                    x.parse()
                        .map_err(|_| format!("--flows: {x:?} is not a flow id"))
                })
                .collect()
        })
        .transpose()
}

/// Run the command line `argv` (`argv[0]` is the program name) and return
/// the process exit code: 0, or 2 after a one-line error on stderr. Used by
/// the `cclab-link` binary and by `python -m cclab._link` (the same code
/// compiled into the Python extension, see crates/cclab-py).
pub fn main(argv: &[String]) -> i32 {
    set_process_name();
    let cmd = argv.get(1).map(|s| s.as_str()).unwrap_or("");
    let result = parse(argv.get(2..).unwrap_or(&[])).and_then(|m| match cmd {
        "emulate" => emulator::run(&emulator::EmulatorArgs {
            ir_path: get(&m, "ir")?.into(),
            snd_netns: get(&m, "snd-netns")?.into(),
            rcv_netns: get(&m, "rcv-netns")?.into(),
            dev: m.get("dev").cloned().unwrap_or_else(|| "cltun".into()),
            out_dir: get(&m, "out")?.into(),
            spin_ns: m
                .get("spin-ns")
                .map(|s| s.parse().unwrap_or(0))
                .unwrap_or(0),
            rt_prio: m
                .get("rt-prio")
                .map(|s| s.parse().unwrap_or(0))
                .unwrap_or(0),
        }),
        "emulate-topo" => topo::run(&topo::TopoArgs {
            ir_path: get(&m, "ir")?.into(),
            hosts: get(&m, "hosts")?
                .split(',')
                .map(|x| {
                    x.split_once('=')
                        .map(|(n, p)| (n.to_string(), p.to_string()))
                        .ok_or_else(|| format!("--hosts: {x:?} is not NODE=PATH"))
                })
                .collect::<Result<Vec<_>, _>>()?,
            dev: m.get("dev").cloned().unwrap_or_else(|| "cltun".into()),
            out_dir: get(&m, "out")?.into(),
            spin_ns: m
                .get("spin-ns")
                .map(|s| s.parse().unwrap_or(0))
                .unwrap_or(0),
            rt_prio: m
                .get("rt-prio")
                .map(|s| s.parse().unwrap_or(0))
                .unwrap_or(0),
        }),
        "send" => traffic::send(&load_ir(&m)?, get(&m, "netns")?, t0(&m)?, flows_arg(&m)?),
        "recv" => traffic::recv(
            &load_ir(&m)?,
            get(&m, "netns")?,
            t0(&m)?,
            get(&m, "out")?,
            m.get("listen").map(|s| s.as_str()),
            m.get("read-latency").map(|s| s.as_str()),
        ),
        "version" => {
            println!("cclab-link {} source {}", crate::VERSION, crate::SOURCE_HASH);
            Ok(())
        }
        _ => Err("usage: cclab-link emulate|emulate-topo|send|recv|version [--key value …]".into()),
    });
    let _ = std::io::stdout().flush();
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("cclab-link {cmd}: {e}");
            2
        }
    }
}

/// Name the process `cclab-link` (`/proc/PID/comm`, what `ps` and `top`
/// show) also when it runs inside a Python interpreter.
fn set_process_name() {
    unsafe {
        libc::prctl(
            libc::PR_SET_NAME,
            c"cclab-link".as_ptr() as libc::c_ulong,
            0,
            0,
            0,
        )
    };
}
