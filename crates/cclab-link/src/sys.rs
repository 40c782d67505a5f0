//! The few raw Linux calls the emulator and the traffic endpoints need.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// CLOCK_MONOTONIC in ns — the clock every cclab process of a run shares
/// (Python's `time.monotonic_ns()` reads the same one).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// Sleep until CLOCK_MONOTONIC reaches `t` (absolute), resuming after signals.
pub fn sleep_until(t: u64) {
    let ts = timespec(t);
    loop {
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if r != libc::EINTR {
            return;
        }
    }
}

fn open_path(path: &str, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = CString::new(path)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))?;
    let fd = cvt(unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) })?;
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Move the calling thread into the network namespace at `path` (e.g. /run/netns/NAME).
pub fn enter_netns(path: &str) -> io::Result<()> {
    let ns = open_path(path, libc::O_RDONLY)
        .map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
    cvt(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) })
        .map_err(|e| io::Error::new(e.kind(), format!("setns {path}: {e}")))?;
    Ok(())
}

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Create (and open) TUN device `name` inside the namespace at `netns`,
/// then return to the namespace the thread was in. The device lives as
/// long as the returned descriptor (non-persistent), so it disappears with
/// the emulator — and with the namespace.
pub fn open_tun_in(netns: &str, name: &str) -> io::Result<OwnedFd> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name {name:?}"),
        ));
    }
    let home = open_path("/proc/thread-self/ns/net", libc::O_RDONLY)?;
    enter_netns(netns)?;
    let result = (|| {
        let fd = open_path("/dev/net/tun", libc::O_RDWR | libc::O_NONBLOCK)?;
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: IFF_TUN | IFF_NO_PI,
            _pad: [0; 22],
        };
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        cvt(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut req) })
            .map_err(|e| io::Error::new(e.kind(), format!("TUNSETIFF {name} in {netns}: {e}")))?;
        Ok(fd)
    })();
    cvt(unsafe { libc::setns(home.as_raw_fd(), libc::CLONE_NEWNET) })?;
    result
}

/// Timer slack 1 ns: ppoll/nanosleep wake as close to their deadline as the
/// kernel can (the default 50 µs slack would be most of a packet time at 500 Mbit/s).
pub fn set_timer_slack_1ns() {
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Receive SIGTERM when the parent (the Python run) dies, even by SIGKILL.
pub fn die_with_parent() {
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) };
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Block SIGTERM/SIGINT/SIGHUP (they are only delivered inside `ppoll`,
/// which unblocks them atomically — no lost-wakeup race) and install a
/// handler that sets the stop flag. Returns the mask to pass to `ppoll`.
pub fn install_stop_signals() -> libc::sigset_t {
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(s, &sa, std::ptr::null_mut());
        }
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let mut unblocked: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut unblocked);
        unblocked
    }
}

pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Block in ppoll on `fds` for up to `timeout_ns` (None: forever), with
/// stop signals unblocked. Returns the number of ready descriptors (0 on
/// timeout or signal).
pub fn ppoll(
    fds: &mut [libc::pollfd],
    timeout_ns: Option<u64>,
    mask: &libc::sigset_t,
) -> io::Result<usize> {
    let ts = timeout_ns.map(timespec);
    let tsp = ts
        .as_ref()
        .map(|t| t as *const _)
        .unwrap_or(std::ptr::null());
    let r = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, tsp, mask) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

/// Wait (blocking) until a stop signal arrives.
pub fn wait_for_stop(mask: &libc::sigset_t) {
    while !stop_requested() {
        let _ = ppoll(&mut [], Some(1_000_000_000), mask);
    }
}

pub fn read_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    let r = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut _, buf.len()) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

pub fn write_fd(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    let r = unsafe { libc::write(fd, buf.as_ptr() as *const _, buf.len()) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// CPU time (user + system) of this process in ns.
pub fn process_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Run this thread under SCHED_FIFO at `prio` (1–99) so the emulator wakes
/// on time even when other work competes for the CPUs. It sleeps in ppoll
/// between packets and the kernel's RT throttling (sched_rt_runtime_us)
/// still bounds it, so it cannot lock the machine up.
pub fn set_realtime(prio: i32) -> io::Result<()> {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    cvt(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) }).map(|_| ())
}
