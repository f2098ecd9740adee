//! How a run is driven, where the command line leaves it open: the scheduler, whether every worker reads the files
//! or a reader thread dispatches, how many packet buffers lie between the reader and the workers. The defaults
//! depend on the inputs (a pipe can be read only once) and on the other options, so they are chosen here, once,
//! from what was asked; what does not go together is refused with one line.

use std::path::PathBuf;

use anyhow::bail;
use flowbundle_scheduler::SchedOptions;
use flowbundle_types::Exec;

use crate::config::StagedExec;

/// `--packet-buffers` by default: for live capture, whose packets are copied into them, 512 keeps the buffers
/// within a core's L2 cache (512 × 2 KiB; with 4,096 the reader's copy missed the cache for most packets and the run
/// took about 1.5× the CPU).
pub const DEFAULT_PACKET_BUFFERS: usize = 512;
/// `--packet-buffers` by default for a reader thread reading files, whose buffers point into the capture's own:
/// fewer waits for a free buffer, 0–5% faster on 2 cores than 512 (BENCHMARKS.md).
pub const DEFAULT_FILE_PACKET_BUFFERS: usize = 2048;

/// What the command line asked of the runtime, before the defaults.
#[derive(Clone, Debug, Default)]
pub struct Asked<'a> {
    /// The capture files (`-` for standard input); none for a live run.
    pub files: &'a [PathBuf],
    /// Workers (1: the single-threaded loop).
    pub threads: usize,
    /// `--scheduler`, if given.
    pub scheduler: Option<&'a str>,
    /// `--exec`, if given.
    pub exec: Option<flowbundle_types::Exec>,
    /// `--detect-workers`, if given.
    pub detect_workers: Option<usize>,
    /// Live capture or inline.
    pub live: bool,
    /// Inline (a live run whose workers forward).
    pub inline: bool,
    /// The kernel spreads the packets over the workers' rings (`--fanout`).
    pub fanout: bool,
    /// `--workers-read`, if given.
    pub workers_read: Option<bool>,
    /// `--reader-inspects`.
    pub reader_inspects: bool,
    /// `--packet-buffers`, if given.
    pub packet_buffers: Option<usize>,
}

/// The choices made: what [`crate::Config`] takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chosen {
    /// The scheduler (`None`: lfb).
    pub scheduler: Option<String>,
    /// Every worker reads the files (no reader thread).
    pub workers_read: bool,
    /// Packet buffers between a reader and the workers.
    pub packet_buffers: usize,
}

/// Chooses the scheduler, whether every worker reads and the packet buffers from `asked`, refusing a
/// `--workers-read` that cannot be (see the option's help).
pub fn choose(asked: &Asked<'_>) -> anyhow::Result<Chosen> {
    let threads = asked.threads;
    let staged = asked.staged();
    // Every worker reading the inputs opens each by its path (once, for all the workers: `flowbundle_inspect::each`):
    // only regular files can be (not standard input, nor a pipe).
    let rereadable = asked
        .files
        .iter()
        .all(|f| std::fs::metadata(f).is_ok_and(|m| m.is_file()));
    if asked.workers_read == Some(true) {
        if threads > 1 && !rereadable {
            bail!(
                "--workers-read reads every input once per worker: standard input and pipes can be read only once"
            );
        }
        if asked.reader_inspects {
            bail!(
                "--workers-read and --reader-inspects exclude each other: with --workers-read there is no reader"
            );
        }
        if staged || asked.live {
            bail!(
                "--workers-read reads files, run to completion (no --exec pipeline or multilayer, no --interface or \
                 --inline)"
            );
        }
        let policy = asked.scheduler.unwrap_or("lfb");
        if threads > 1 && !placed_alike(policy) {
            bail!(
                "--workers-read needs --scheduler dh, rss or lfb (a placement every worker can compute from the input \
                 alone; {policy} decides as the run goes)"
            );
        }
    }
    // Whatever needs a reader thread: live capture, standard input or a pipe (read once), a staged --exec (its
    // groups are fed by a dispatcher), --reader-inspects (the reader is a worker).
    let needs_reader = !rereadable || asked.reader_inspects || staged || asked.live;
    // The default scheduler for files: dh with every worker reading. Measured with `scripts/bench-inspect-parallel`
    // (2 cores) and `scripts/bench-inspect-scaling` (16 cores; BENCHMARKS.md, "1 to 16 workers on a 16-core
    // machine"): 1.33x the single-threaded loop at 2 threads without rules against lfb's 1.17x when chosen, and on
    // 16 cores 5.3x at 16 workers (main @ 231963d) where lfb with its reader thread reaches 1.1x (the reader
    // dispatching for every worker is the bottleneck from 4 workers on). Whatever needs a reader thread, and
    // --workers-read=false, keeps lfb.
    let scheduler = match asked.scheduler {
        Some(s) => Some(s.to_string()),
        None if threads > 1 && asked.workers_read != Some(false) && !needs_reader => {
            Some("dh".to_string())
        }
        None => None,
    };
    // Every worker reads the files under each policy whose placement every worker can compute from the input (dh,
    // rss, lfb) when nothing needs a reader: measured on 2 cores, lfb and rss with every worker reading ran at
    // 1.54-1.80x the single-threaded loop's speed, with a reader thread at 1.03-1.56x (BENCHMARKS.md).
    let workers_read = asked
        .workers_read
        .unwrap_or(!needs_reader && placed_alike(scheduler.as_deref().unwrap_or("lfb")));
    // A reader thread reading files gets more buffers (not every worker reading, whose window is 64 times this; not
    // a staged --exec, whose groups are fed by a dispatcher).
    let packet_buffers =
        asked
            .packet_buffers
            .unwrap_or(if !asked.live && !workers_read && !staged {
                DEFAULT_FILE_PACKET_BUFFERS
            } else {
                DEFAULT_PACKET_BUFFERS
            });
    Ok(Chosen {
        scheduler,
        workers_read,
        packet_buffers,
    })
}

impl Asked<'_> {
    /// A staged execution model named (`--exec pipeline` or `multilayer`), whatever the thread count: its groups are
    /// fed by a dispatcher. Run-to-completion named (`--exec rtc`) is the default model, and runs as the default
    /// does.
    pub fn staged(&self) -> bool {
        self.exec.is_some_and(|m| m != Exec::Rtc)
    }
}

/// `--exec` checked against the rest of what was asked: `None` for run-to-completion (the default, and what one
/// worker runs whatever the model: with fewer workers than groups the groups merge, as the simulator merges them).
pub fn staged_exec(asked: &Asked<'_>) -> anyhow::Result<Option<StagedExec>> {
    let threads = asked.threads;
    let model = match asked.exec {
        None | Some(Exec::Rtc) => {
            if asked.detect_workers.is_some() {
                bail!("--detect-workers applies to --exec pipeline and --exec multilayer");
            }
            return Ok(None);
        }
        Some(m) => m,
    };
    if threads < 2 {
        eprintln!(
            "warning: --exec {} needs a worker per group: one worker runs every stage (run-to-completion)",
            model.name()
        );
        return Ok(None);
    }
    if asked.inline {
        bail!(
            "--exec {} does not run inline: a packet's verdict is known only after its detection stage, and a flow's \
             packets must leave in order",
            model.name()
        );
    }
    if asked.fanout {
        bail!(
            "--exec {} runs the groups under --scheduler; --fanout gives each worker its own ring",
            model.name()
        );
    }
    let scheduler = asked.scheduler.unwrap_or("lfb");
    let opts = SchedOptions {
        ph_late_claim: false,
        ..SchedOptions::default()
    };
    let shape = flowbundle_scheduler::build(scheduler, 2, &opts)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .shape();
    if !shape.keeps_flow_order {
        bail!(
            "--exec {} needs a scheduler that keeps each flow's packets in order (every policy but ph): the \
             detection group must receive a flow's packets in the order the flow group inspected them",
            model.name()
        );
    }
    let detect_workers = asked.detect_workers.unwrap_or(threads / 2);
    if detect_workers == 0 || detect_workers >= threads {
        bail!(
            "--detect-workers must leave at least one worker to each group (1 to {})",
            threads - 1
        );
    }
    Ok(Some(StagedExec {
        model,
        detect_workers,
    }))
}

/// Whether `policy`'s placement is one every worker computes alike from the input (dh, rss, lfb).
fn placed_alike(policy: &str) -> bool {
    flowbundle_scheduler::canonical(policy)
        .and_then(flowbundle_inspect::Placement::for_policy)
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(files: &[PathBuf]) -> Asked<'_> {
        Asked {
            files,
            threads: 2,
            ..Asked::default()
        }
    }

    #[test]
    fn files_default_to_dh_with_every_worker_reading() {
        let dir = std::env::temp_dir().join(format!("flowbundle-mode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a.pcap");
        std::fs::write(&file, b"x").unwrap();
        let files = [file];
        let c = choose(&asked(&files)).unwrap();
        assert_eq!(c.scheduler.as_deref(), Some("dh"));
        assert!(c.workers_read);
        assert_eq!(c.packet_buffers, DEFAULT_PACKET_BUFFERS);
        // A reader thread asked for: lfb, and the file reader's buffers.
        let c = choose(&Asked {
            workers_read: Some(false),
            ..asked(&files)
        })
        .unwrap();
        assert_eq!((c.scheduler, c.workers_read), (None, false));
        assert_eq!(c.packet_buffers, DEFAULT_FILE_PACKET_BUFFERS);
        // A policy that decides as the run goes cannot be computed by every worker.
        let c = choose(&Asked {
            scheduler: Some("ph"),
            ..asked(&files)
        })
        .unwrap();
        assert!(!c.workers_read);
        assert!(
            choose(&Asked {
                scheduler: Some("ph"),
                workers_read: Some(true),
                ..asked(&files)
            })
            .is_err()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn standard_input_needs_a_reader_thread() {
        let files = [PathBuf::from("-")];
        let c = choose(&asked(&files)).unwrap();
        assert_eq!((c.scheduler, c.workers_read), (None, false));
        let e = choose(&Asked {
            workers_read: Some(true),
            ..asked(&files)
        })
        .unwrap_err();
        assert!(e.to_string().contains("can be read only once"), "{e}");
    }
}
