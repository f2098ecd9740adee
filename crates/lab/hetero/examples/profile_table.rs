//! The `hetero profile` table without building the whole CLI: the same calls (`device::discover`,
//! `profiler::profile_device`, `Profile::render_table`) with the CLI's defaults (every application, batches of
//! 1K/4K/16K packets, 0/1/3 co-running kernels of each application, 1,500-byte packets of real payload, the 10k
//! content set). A release build of this crate alone takes minutes on the shared machine; the CLI's takes the
//! whole workspace.
//!
//! `cargo run --release -p flowbundle-hetero --example profile_table -- [--min-time-ms 300] [--json out.json]
//! [--devices cpu,ocl0] [--threads 0] [--with-paper]`

use std::sync::Arc;
use std::time::Duration;

use flowbundle_hetero::device;
use flowbundle_hetero::energy::PowerMeters;
use flowbundle_hetero::profiler::{ProfilerConfig, profile_device};
use flowbundle_hetero::{Dfa, DfaLimits, Profile, payload};

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn main() {
    let min_time_ms: u64 = arg("--min-time-ms")
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let threads: usize = arg("--threads").and_then(|v| v.parse().ok()).unwrap_or(0);
    let wanted: Vec<String> = arg("--devices")
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let with_paper = std::env::args().any(|a| a == "--with-paper");
    let root = flowbundle_testsupport::data_root();
    let path = root.join("rules/content-10k.hex");
    let dfa = match Dfa::from_file(&path, DfaLimits::default()) {
        Ok((d, _)) => Arc::new(d),
        Err(e) => {
            eprintln!("skipping: {} not usable ({e})", path.display());
            return;
        }
    };
    let payloads = payload::real_payloads(&root, 1500, 4096);
    if payloads.is_empty() {
        eprintln!("skipping: no real payload under {}", root.display());
        return;
    }
    let (mut devs, notes) = device::discover(threads, dfa);
    for n in notes {
        eprintln!("note: {n}");
    }
    if !wanted.is_empty() {
        devs.retain(|d| wanted.contains(&d.info().id));
    }
    let cfg = ProfilerConfig {
        min_time: Duration::from_millis(min_time_ms),
        ..ProfilerConfig::default()
    };
    let mut meters = PowerMeters::open();
    for n in &meters.notes {
        eprintln!("power: {n}");
    }
    let mut table = Profile::default();
    table.notes.push(format!(
        "packets of 1500 bytes of real payload; command: {}",
        std::env::args().collect::<Vec<_>>().join(" ")
    ));
    for d in &mut devs {
        let i = d.info().clone();
        eprintln!(
            "device {}: {} ({}, {} units)",
            i.id,
            i.name,
            i.kind.label(),
            i.compute_units
        );
        match profile_device(d.as_mut(), &payloads, &cfg, &mut meters, |line| {
            eprintln!("{line}")
        }) {
            Ok(p) => table.merge(p),
            Err(e) => eprintln!("device {}: {e}", i.id),
        }
    }
    if with_paper {
        table.merge(Profile::pythia_paper());
    }
    print!("{}", table.render_table());
    if let Some(p) = arg("--json")
        && let Err(e) = std::fs::write(&p, table.to_json())
    {
        eprintln!("writing {p}: {e}");
    }
}
