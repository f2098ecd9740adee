//! Times the trace tools' two throughput goals (synthesis and merging) through the library calls the CLI makes, without building
//! the whole `flowbundle` binary:
//!
//! * `tools_speed synth OUT.pcap [PACKETS] [PROFILE]`: [`synth::write_pcap`] (default 1,000,000 packets of the
//!   `many` profile), the work of `flowbundle trace synth --profile many --packets N -o OUT`;
//! * `tools_speed merge OUT.pcap K [--report] IN...`: [`merge::merge_files`] with `--factor K` (metrics off unless
//!   `--report`), the work of `flowbundle trace merge IN... --factor K [--no-report] -o OUT`.
//!
//! Prints wall time and packets/s. Build with `cargo build --release -p flowbundle-trace --example tools_speed`.

use std::process::ExitCode;
use std::time::Instant;

use flowbundle_trace::merge::{MergeConfig, merge_files};
use flowbundle_trace::stats::Progress;
use flowbundle_trace::synth::{self, SynthConfig};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tools_speed: {e}");
            eprintln!(
                "usage: tools_speed synth OUT [PACKETS] [PROFILE] | tools_speed merge OUT K [--report] IN..."
            );
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("synth") => {
            let out = args.get(1).ok_or("synth needs an output file")?;
            let packets: u64 = match args.get(2) {
                Some(n) => n
                    .parse()
                    .map_err(|_| format!("`{n}` is not a packet count"))?,
                None => 1_000_000,
            };
            let profile = args.get(3).map_or("many", String::as_str);
            let cfg = SynthConfig::profile(profile)
                .ok_or_else(|| format!("unknown profile `{profile}`"))?
                .with_packets(packets);
            let t = Instant::now();
            let s = synth::write_pcap(&cfg, out, Progress::Hidden).map_err(|e| e.to_string())?;
            let secs = t.elapsed().as_secs_f64();
            println!(
                "synth {profile}: {} packets, {} connections, {} bytes in {secs:.3} s: {:.0} packets/s",
                s.packets,
                s.connections,
                s.wire_bytes,
                s.packets as f64 / secs
            );
            Ok(())
        }
        Some("merge") => {
            let out = args.get(1).ok_or("merge needs an output file")?;
            let k: u32 = args
                .get(2)
                .and_then(|k| k.parse().ok())
                .ok_or("merge needs a factor K")?;
            let report = args.iter().any(|a| a == "--report");
            let inputs: Vec<&String> = args[3..].iter().filter(|a| *a != "--report").collect();
            let cfg = MergeConfig {
                factor: k,
                report,
                ..MergeConfig::default()
            };
            let t = Instant::now();
            let r = merge_files(&inputs, out, &cfg).map_err(|e| e.to_string())?;
            let secs = t.elapsed().as_secs_f64();
            println!(
                "merge ×{k} of {} input(s){}: {} packets written in {secs:.3} s: {:.0} packets/s",
                inputs.len(),
                if report { " with metrics" } else { "" },
                r.counts.written,
                r.counts.written as f64 / secs
            );
            Ok(())
        }
        _ => Err("give synth or merge".into()),
    }
}
