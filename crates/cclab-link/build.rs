//! Embeds a hash of the emulator's own sources (this crate, cclab-netmodel,
//! their manifests and the lock file) and of the compiler and profile that
//! build it, as `CCLAB_LINK_SOURCE_HASH`. `cclab-link version` prints it, and
//! `cclab parity` keys kernel records by it: a change to the simulator alone
//! leaves the emulator — and so the kernel records — as they were.

use std::fs;
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// FNV-1a, 64 bits: stable across Rust versions (std's hasher is not).
fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= b as u64;
        *h = h.wrapping_mul(0x100_0000_01b3);
    }
}

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let crates = here.parent().unwrap().to_path_buf();
    let root = crates.parent().unwrap().to_path_buf();
    let mut list = Vec::new();
    for dir in [here.join("src"), crates.join("cclab-netmodel").join("src")] {
        println!("cargo:rerun-if-changed={}", dir.display());
        files(&dir, &mut list);
    }
    for f in [here.join("Cargo.toml"), crates.join("cclab-netmodel").join("Cargo.toml"), root.join("Cargo.toml"), root.join("Cargo.lock")] {
        println!("cargo:rerun-if-changed={}", f.display());
        list.push(f);
    }
    list.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in &list {
        let rel = f.strip_prefix(&root).unwrap_or(f);
        fnv(&mut h, rel.to_string_lossy().as_bytes());
        fnv(&mut h, &fs::read(f).unwrap_or_default());
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc).arg("-V").output().map(|o| o.stdout).unwrap_or_default();
    fnv(&mut h, &version);
    fnv(&mut h, std::env::var("PROFILE").unwrap_or_default().as_bytes());
    fnv(&mut h, std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default().as_bytes());
    println!("cargo:rustc-env=CCLAB_LINK_SOURCE_HASH={h:016x}");
}
