//! The engine's layers measured from per-packet callgrind profiles (`flowbundle_sim::layers`): instructions per
//! visit, code footprint and code lines per visit of each layer, written as the JSON the simulator reads
//! (`flowbundle simulate --exec ... --exec-layers FILE`) and as a table. `scripts/exec-layers` runs the whole
//! measurement.
//!
//! `exec_layers CAPTURE SKIP SOURCE DUMP...`: CAPTURE is the capture the profiled `flowbundle inspect` read (one
//! profile per packet, in order: callgrind's `--dump-after` on the engine's per-packet entry point writes them);
//! the first SKIP profiles (the rule set's loading, cold caches of the process) are left out; SOURCE describes the
//! run for the JSON. The JSON goes to standard output, the table to standard error.

use flowbundle_decode::{DecodeOptions, L4, decode};
use flowbundle_ingest::CaptureReader;
use flowbundle_sim::exec::ExecParams;
use flowbundle_sim::layers::{Dump, LayerMeasures, Names, PacketClass, Profile, parse};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: exec_layers CAPTURE SKIP SOURCE DUMP...");
        std::process::exit(2);
    }
    let skip: usize = args[2].parse().unwrap_or(0);
    let mut classes = Vec::new();
    let mut reader = match CaptureReader::open(std::path::Path::new(&args[1])) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{}: {e}", args[1]);
            std::process::exit(1);
        }
    };
    let opts = DecodeOptions::default();
    while let Ok(Some(rec)) = reader.next_packet() {
        let d = decode(&rec, &opts);
        let proto = match d.l4 {
            L4::Tcp(_) => 6,
            L4::Udp(_) => 17,
            _ => d.ip.map_or(0, |ip| ip.proto),
        };
        classes.push(PacketClass {
            proto,
            payload: d.payload.len() as u32,
        });
    }
    // Profiles in packet order: callgrind numbers them `<file>.1`, `<file>.2`, ...
    let mut files: Vec<(usize, &String)> = args[4..]
        .iter()
        .filter_map(|f| {
            let n = f.rsplit('.').next()?.parse::<usize>().ok()?;
            Some((n, f))
        })
        .collect();
    files.sort();
    let mut names = Names::default();
    let mut dumps: Vec<(PacketClass, Dump)> = Vec::new();
    for (n, f) in files {
        // Profile k covers packet k - 1 (and what ran since the previous packet: reading it, writing output).
        let Some(&class) = classes.get(n - 1) else {
            continue;
        };
        if n <= skip {
            continue;
        }
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{f}: {e}");
                std::process::exit(1);
            }
        };
        match parse(&text, &mut names) {
            Ok(d) => dumps.push((class, d)),
            Err(e) => {
                eprintln!("{f}: {e}");
                std::process::exit(1);
            }
        }
    }
    if dumps.is_empty() {
        eprintln!("no profiles after the first {skip}");
        std::process::exit(1);
    }
    let profile = Profile::new(dumps.iter().map(|(_, d)| d));
    let base = ExecParams::thesis();
    let visits: Vec<_> = base.layers.iter().map(|l| l.visits).collect();
    let m = LayerMeasures::measure(&args[3], &profile, dumps, &visits);
    eprintln!("{}", m.table());
    println!("{}", m.to_json());
}
