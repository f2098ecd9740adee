//! Driving a run's inputs: the single-threaded loop (`--threads 1`), every worker reading the files
//! ([`flowbundle_worker::run_each`], [`flowbundle_inspect::each`]), the streaming runtime with a reader thread
//! ([`flowbundle_worker::run_stream`]: files, standard input, live sources, inline, the staged execution models),
//! and the live loop of one thread. [`run`] runs a [`Config`]'s inputs (one group, or each file on its own) and
//! returns what each left for the summary.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};
use flowbundle_ingest::{LiveSource, PacketArena, Probed};
use flowbundle_inspect::rules::ThresholdTable;
use flowbundle_inspect::{
    AlertFilter, ArenaSource, Broadcast, BufferDecodes, Engine, Event, EventMerge, Finished,
    Inline, InspectWorkload, LiveReader, Prestage, PrestageStats, Renderer, Scripts, StagedInspect,
    StatsBoard, StreamOrder, StreamReader, WorkerCtx,
};
use flowbundle_scheduler::SchedOptions;
use flowbundle_sinks::{EveOptions, RunInfo, StatsRecord};
use flowbundle_worker::{Crew, StreamConfig, run_stream, run_stream_staged};

use crate::config::Config;
use crate::live::note_capture;
use crate::progress::Progress;
use crate::read_end::note_read_end;
use crate::reload::{Loaded, Reloader};
use crate::sink::{CostSink, PeriodicStats, Sink, wall_clock_ns};

/// What one group of inputs left: the end of its run (last events, counters), its pre-scheduling stage's counters,
/// and what the summary says of it.
pub type Report = (Finished, PrestageStats, RunInfo);

/// What a run reads: capture files (each probed before the run, [`flowbundle_ingest::CaptureReader::probe`], or a
/// path to open when its turn comes), or a live source: an interface, or an inline pair (whose workers forward).
#[derive(Default)]
pub struct Sources {
    /// Read one after the other as one input (or each on its own: [`Config::per_file`]).
    pub files: Vec<Probed>,
    pub live: Option<LiveSource>,
    pub inline: Option<Inline>,
}

/// Runs `sources`' files (or its live source) through a fresh engine with `sets` (one per group under
/// [`Config::per_file`]), writing the events into `sink` and the cost records into `costs` as they come; returns
/// each group's report, `info` (what the caller knows of the run: inputs, rule counts) completed for each. A rule
/// reload of a live run comes through `reloader`.
pub fn run(
    cfg: &Config,
    sets: &Loaded,
    sink: &mut Sink,
    costs: &mut CostSink,
    sources: &mut Sources,
    mut reloader: Option<&mut Reloader>,
    info: &RunInfo,
) -> anyhow::Result<Vec<Report>> {
    // `--per-file`: each input on its own (flow state, timeouts, summary), its packets numbered on from the previous
    // input's, so that flow ids stay unique in the one EVE output.
    let files = std::mem::take(&mut sources.files);
    let groups: Vec<Vec<Probed>> = if cfg.per_file && !files.is_empty() {
        files.into_iter().map(|f| vec![f]).collect()
    } else {
        vec![files]
    };
    // Each worker's counters as it left the run (for the stats record's `threads`).
    let mut worker_stats = Vec::new();
    let mut first_packet = 0u64;
    let mut reports = Vec::new();
    for files in groups {
        let paths: Vec<PathBuf> = files.iter().map(|f| f.path().to_path_buf()).collect();
        // Thresholds count afresh with each input under --per-file, as its flows do.
        sink.filter = sets.rules.as_deref().and_then(|r| {
            AlertFilter::with_config(r, &sets.threshold, ThresholdTable::default())
                .map(|f| f.ips(cfg.engine.ips))
        });
        let mut engine = Engine::with_shared(
            cfg.engine.clone(),
            sets.signatures.clone(),
            sets.rules.clone(),
        );
        if cfg.exec.is_some() {
            engine = engine.staged();
        }
        let mut info = RunInfo {
            inputs: if cfg.per_file {
                paths.iter().map(|p| p.display().to_string()).collect()
            } else {
                info.inputs.clone()
            },
            ..info.clone()
        };
        let start = Instant::now();
        let (mut finished, pre) = inspect_inputs(
            cfg,
            files,
            first_packet,
            &mut engine,
            sources.live.as_mut(),
            sources.inline.as_ref(),
            sink,
            costs,
            &mut info,
            &mut worker_stats,
            reloader.as_deref_mut(),
        )?;
        if let Some(r) = reloader.as_deref_mut() {
            r.abandon();
            info.reloads = Some(r.info);
        }
        info.elapsed = Some(start.elapsed());
        first_packet += info.packets_read;
        sink.write(&std::mem::take(&mut finished.events))?;
        for f in sink.retired_filters.drain(..) {
            f.correct(&mut finished);
        }
        if let Some(f) = &sink.filter {
            f.correct(&mut finished);
            let st = f.stats();
            if st.table_full > 0 {
                eprintln!(
                    "warning: threshold table full: {} matches judged without their count",
                    st.table_full
                );
            }
            let xb = f.xbit_stats();
            if xb.table_full > 0 {
                eprintln!("warning: xbits table full: {} bits not set", xb.table_full);
            }
            let tags = f.host_tag_stats();
            if tags.dropped > 0 {
                eprintln!(
                    "warning: host tag table full: {} host tags not set",
                    tags.dropped
                );
            }
            for (name, st) in f.datasets().stats() {
                if st.memcap_full > 0 {
                    eprintln!(
                        "warning: dataset {name} memcap reached: {} values not set",
                        st.memcap_full
                    );
                }
            }
            let uncaptured = f.datasets().uncaptured;
            if uncaptured > 0 {
                eprintln!(
                    "warning: {uncaptured} alerts dropped: a dataset operation's buffer value was not captured"
                );
            }
            if let Err(e) = f.save_datasets() {
                eprintln!("warning: {e}");
            }
        }
        costs.write(&std::mem::take(&mut finished.cost_records))?;
        let prestage = pre.stats();
        // With --per-file, one stats record per input, as one summary per input.
        if cfg.eve_stats
            && let Some(w) = &mut sink.eve
        {
            let now_ns = wall_clock_ns();
            let mut line = Vec::new();
            flowbundle_sinks::render_stats(
                &mut line,
                &StatsRecord {
                    now_ns,
                    uptime: start.elapsed(),
                    total: &finished.stats,
                    prestage: Some(&prestage),
                    info: &info,
                    workers: if cfg.eve_stats_threads {
                        &worker_stats
                    } else {
                        &[]
                    },
                },
            );
            w.write_rendered(&line, 1).context("writing EVE output")?;
        }
        worker_stats.clear();
        reports.push((finished, prestage, info));
    }
    Ok(reports)
}

/// Inspects `files` (or the live capture) with a fresh `engine`, the packets numbered from `first_packet`; writes
/// the events as they come and returns what the end of the input left (the last events, the counters) and the
/// pre-scheduling stage.
#[allow(clippy::too_many_arguments)]
fn inspect_inputs(
    cfg: &Config,
    files: Vec<Probed>,
    first_packet: u64,
    engine: &mut Engine,
    mut live: Option<&mut LiveSource>,
    inline: Option<&Inline>,
    sink: &mut Sink,
    costs: &mut CostSink,
    info: &mut RunInfo,
    worker_stats: &mut Vec<flowbundle_inspect::EngineStats>,
    mut reloader: Option<&mut Reloader>,
) -> anyhow::Result<(flowbundle_inspect::Finished, Prestage)> {
    let (threads, exec) = (cfg.threads, cfg.exec);
    let mut pre = Prestage::new(engine.config());
    let finished = match threads {
        // Inline runs through the streaming runtime whatever the thread count: its workers forward.
        1 if inline.is_none() => {
            let mut ctx = engine.new_ctx();
            let mut events = Vec::new();
            let mut recs = Vec::new();
            let mut num = first_packet;
            if let Some(cap) = live.as_mut() {
                num = inspect_live(
                    cap,
                    cfg,
                    engine,
                    &mut ctx,
                    &mut pre,
                    sink,
                    costs,
                    reloader.as_deref_mut(),
                    info,
                )?;
                note_capture(cap, &cfg.live.capture, 0, info);
            }
            let mut timeline = flowbundle_ingest::Timeline::default();
            let mut sweeps = flowbundle_inspect::SweepClock::new(engine.config().sweep);
            let mut periodic = PeriodicStats::new(cfg.stats_interval);
            let mut latest_ts = 0;
            let progress = Progress::new();
            for input in files {
                let path = input.path().to_path_buf();
                let mut reader = input
                    .open()
                    .with_context(|| format!("cannot open {}", path.display()))?;
                timeline.input(&path);
                loop {
                    let rec = match reader.next_packet() {
                        Ok(Some(r)) => r,
                        Ok(None) => break,
                        Err(e) => {
                            eprintln!("{}: {e} (stopping this input here)", path.display());
                            info.input_errors += 1;
                            break;
                        }
                    };
                    if let Some(w) = timeline.packet(rec.ts_ns) {
                        eprintln!("{w}");
                    }
                    engine.process_serial(&mut ctx, &mut pre, num, &rec);
                    num += 1;
                    if let Some(now) = sweeps.packet(rec.ts_ns) {
                        engine.expire_serial(&mut ctx, now);
                    }
                    latest_ts = latest_ts.max(rec.ts_ns);
                    if let Some(p) = periodic.as_mut()
                        && p.due(latest_ts)
                    {
                        ctx.take_events(&mut events);
                        sink.write(&events)?;
                        events.clear();
                        p.write(sink, ctx.stats(), num - first_packet)?;
                    }
                    if num.is_multiple_of(65_536) {
                        progress.show(num - first_packet, engine, false);
                    }
                    if ctx.pending_events() >= 1024 {
                        ctx.take_events(&mut events);
                        sink.write(&events)?;
                        events.clear();
                    }
                    if num.is_multiple_of(4096) {
                        ctx.take_cost_records(&mut recs);
                        costs.write(&recs)?;
                        recs.clear();
                    }
                }
                note_read_end(&path, reader.stats(), info);
            }
            progress.show(num - first_packet, engine, true);
            info.packets_read = num - first_packet;
            info.capture_span = timeline.span();
            ctx.take_events(&mut events);
            sink.write(&events)?;
            worker_stats.push(ctx.stats().clone());
            engine.finish([ctx])
        }
        n if cfg.workers_read && live.is_none() && inline.is_none() && exec.is_none() => {
            inspect_each(
                cfg,
                &files
                    .iter()
                    .map(|f| f.path().to_path_buf())
                    .collect::<Vec<_>>(),
                n,
                first_packet,
                engine,
                sink,
                info,
                worker_stats,
                &mut pre,
            )?
        }
        n => {
            // The decode-before-claim of `ph`'s late claim keeps a decoded view of a packet across a handoff; the
            // streaming runtime frees a packet's buffer as soon as it has been inspected, so it claims in `next`.
            let kernel_spreads = live.as_ref().is_some_and(|l| l.rings() > 1);
            let sched_opts = SchedOptions {
                ph_late_claim: false,
                // One ring per worker: the `rss` policy's indirection table, left as it starts (bucket k → worker
                // k mod N), sends ring k's packets to worker k (see `flowbundle_inspect::live`).
                rss_interval: if kernel_spreads {
                    u64::MAX
                } else {
                    SchedOptions::default().rss_interval
                },
                ..SchedOptions::default()
            };
            let scheduler = if kernel_spreads {
                "rss"
            } else {
                cfg.scheduler.as_deref().unwrap_or("lfb")
            };
            // Staged models: the flow group gets the workers the detection group does not.
            let flow_workers = exec.map_or(n, |e| n - e.detect_workers);
            let sched = flowbundle_scheduler::build(scheduler, flow_workers, &sched_opts)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            info.threads = Some((
                n,
                if kernel_spreads {
                    format!(
                        "kernel fanout {}",
                        cfg.live.capture.fanout.map_or("?", |m| m.name())
                    )
                } else if let Some(e) = exec {
                    format!(
                        "{} execution: {flow_workers} flow + {} detection workers, {scheduler}",
                        e.model.name(),
                        e.detect_workers
                    )
                } else {
                    scheduler.to_string()
                },
            ));
            let arena = PacketArena::new(cfg.packet_buffers.max(1));
            let (tx, mut merge) = EventMerge::new();
            // With thresholds, the events the filter must see come here whole (see `EventSender::whole_when`).
            let tx = match &sink.filter {
                Some(f) => tx.whole_when(f.needs()),
                None => tx,
            };
            let order = StreamOrder::new(arena.slots());
            let decodes = BufferDecodes::new(arena.slots());
            let keeps_order = sched.shape().keeps_flow_order;
            // EVE lines are rendered on the workers; without an output the events are dropped there. With
            // thresholds, the events the filter must see come here whole: it sees them in order before anything is
            // written.
            let eve_opts = EveOptions {
                extra: cfg.eve_extra,
                ..EveOptions::default()
            };
            let render_eve = move |buf: &mut Vec<u8>, events: &[Event]| {
                flowbundle_sinks::eve::render_lines_with(buf, events, eve_opts)
            };
            let render: &Renderer = match sink.eve {
                Some(_) => &render_eve,
                None => &|_, _| {},
            };
            let forward = |slot: u32, rec: &flowbundle_ingest::PacketRecord<'_>, dropped: bool| {
                if let Some(i) = inline {
                    i.forward(slot, rec, dropped)
                }
            };
            let board = StatsBoard::new(n);
            let mut periodic = PeriodicStats::new(cfg.stats_interval);
            let mut source = ArenaSource::new(&arena, tx.clone()).with_decodes(&decodes);
            if inline.is_some() {
                source = source.with_forward(&forward);
            }
            if periodic.is_some() {
                source = source.with_stats_board(&board);
            }
            // Events are rendered on the workers, but for a live run, whose rule reloads may bring thresholds (and
            // whose inline workers forward sooner without rendering).
            let render_on_workers = live.is_none();
            if render_on_workers {
                source = source.with_renderer(render);
            }
            let stop = AtomicBool::new(false);
            let sweep_render = render_on_workers.then_some(render);
            let reloads = flowbundle_inspect::Reloads::default();
            let mut loaded_sets = std::collections::VecDeque::new();
            let termination = match live {
                Some(_) => Some(
                    flowbundle_inspect::stop_on_termination()
                        .context("installing the SIGINT/SIGTERM handlers")?,
                ),
                None => None,
            };
            // The reader computes only the hashes the policy reads.
            let prestage = || Prestage::new(engine.config()).computing(sched.hashes_read());
            let mut reader = match live {
                Some(cap) => {
                    let mut r = LiveReader::new(&arena, prestage(), cap, &stop)
                        .with_decodes(&decodes)
                        .with_sweeps(engine, tx.clone(), sweep_render)
                        .with_reloads(engine, &reloads)
                        .count(cfg.live.count)
                        .until(cfg.live.deadline())
                        .on_full(cfg.live.queue_full);
                    if kernel_spreads {
                        r = r.kernel_spreads();
                    }
                    if let Some(i) = inline {
                        r = r.with_inline(i);
                    }
                    if !keeps_order {
                        r = r.with_order(&order);
                    }
                    Reader::Live(Box::new(r))
                }
                None => {
                    let mut r = StreamReader::new(&arena, prestage(), files)
                        .stop_when(&stop)
                        .with_decodes(&decodes)
                        .with_sweeps(engine, tx.clone(), sweep_render)
                        .with_window(cfg.reorder_window)
                        .numbered_from(first_packet);
                    if !keeps_order {
                        r = r.with_order(&order);
                    }
                    Reader::Files(Box::new(r))
                }
            };
            if !keeps_order {
                source = source.with_order(&order);
            }
            let progress = Progress::new();
            let mut write_error: Option<anyhow::Error> = None;
            let mut collect = |last: bool| {
                if termination.is_some_and(|t| t.load(Ordering::Relaxed)) {
                    stop.store(true, Ordering::Relaxed);
                }
                progress.update(&arena, engine, last);
                // The watermark first, then the channel (see `flowbundle_inspect::stream`).
                let watermark = arena.oldest_in_flight();
                if write_error.is_some() {
                    // Nothing more is written: what the workers send is dropped, and they do not wait for it.
                    merge.discard();
                    return;
                }
                // Rule reloads: loaded on the reloader's thread, applied by the reader between two packets with none
                // in flight; the events of the packets before that one go out through the old set's thresholds.
                if let Some(rl) = reloader.as_deref_mut()
                    && !reloads.pending()
                    && let Some(l) = rl.poll()
                {
                    reloads.offer((l.signatures.clone(), l.rules.clone()));
                    loaded_sets.push_back(l);
                }
                for a in reloads.take_applied() {
                    if let Err(e) = merge.release(a.seq, |p| sink.write_piece(p)) {
                        write_error = Some(e);
                        stop.store(true, Ordering::Relaxed);
                        return;
                    }
                    if let Some(l) = loaded_sets.pop_front() {
                        sink.adopt(&l, info);
                        if let Some(rl) = reloader.as_deref_mut() {
                            rl.applied(&l);
                        }
                    }
                }
                let r = collect_pass(
                    &mut merge,
                    sink,
                    watermark,
                    last,
                    periodic.as_mut(),
                    &board,
                    arena.filled(),
                );
                if let Err(e) = r {
                    write_error = Some(e);
                    stop.store(true, Ordering::Relaxed);
                }
            };
            let reads_files = matches!(reader, Reader::Files(_));
            let feed = &mut reader;
            // A thread of the run that dies abandons it (`flowbundle_worker::Aborted`): the reader's waits for packet
            // buffers end when the arena closes, and it reads no further.
            let abandon = || {
                arena.close();
                stop.store(true, Ordering::Relaxed);
                tx.close();
            };
            let run_cfg = StreamConfig {
                on_abort: Some(&abandon),
                // `--reader-inspects`, reading files: the reader is worker 0 (see `StreamConfig::reader_works`). A
                // live reader must not stop reading to inspect (the ring would overflow), and does not help.
                reader_works: reads_files && cfg.reader_inspects,
                ..StreamConfig::default()
            };
            let (lost, locals) = match exec {
                None => {
                    let workload = InspectWorkload::new(engine, sched.shape(), &source);
                    let (report, _) = run_stream(
                        sched.as_ref(),
                        &workload,
                        move |crew: &Crew<'_, WorkerCtx>| {
                            let workers = crew.workers();
                            // The reader's sweeps and end-of-input flush run on every worker, by shard.
                            let broadcast =
                                |job: &(dyn Fn(usize, usize, &mut WorkerCtx) + Sync)| {
                                    crew.broadcast(&|w, ctx: &mut WorkerCtx| job(w, workers, ctx))
                                };
                            // A reader that is worker 0 inspects its share when it would wait.
                            let help = || crew.help();
                            feed.next_desc(Some(&broadcast), Some(&help))
                        },
                        &mut collect,
                        &run_cfg,
                    )
                    .map_err(|e| anyhow::anyhow!("inspection abandoned: {e}"))?;
                    // Where the threads waited (BENCHMARKS.md, "Why dh and rss with a reader thread fall below lfb").
                    if let Some((_, line)) = info.threads.as_mut() {
                        let parks: Vec<String> =
                            report.workers.iter().map(|w| w.parks.to_string()).collect();
                        *line = format!(
                            "reader waited {} times for a packet buffer and {} for a queue, workers parked {} times, {line}",
                            arena.waits(),
                            report.dispatcher.full_waits,
                            parks.join("/")
                        );
                    }
                    (report.lost, report.locals)
                }
                Some(e) => {
                    let detect =
                        flowbundle_scheduler::build(scheduler, e.detect_workers, &sched_opts)
                            .map_err(|e| anyhow::anyhow!("{e}"))?;
                    let scripts = Scripts::new(arena.slots());
                    let workload =
                        StagedInspect::new(engine, &source, &scripts, e.visits(), flow_workers);
                    // The staged groups have no crew: the reader sweeps alone, and the end of input is flushed
                    // after the run.
                    let (report, _) = run_stream_staged(
                        &[sched.as_ref(), detect.as_ref()],
                        &workload,
                        move || feed.next_desc(None, None),
                        &mut collect,
                        &run_cfg,
                    )
                    .map_err(|e| anyhow::anyhow!("inspection abandoned: {e}"))?;
                    // What crossed between the groups, for the summary (`scripts/exec-handoff` reads it).
                    if let (Some((_, line)), Some(g)) =
                        (info.threads.as_mut(), report.groups.get(1))
                    {
                        let at = line.rfind(", ").unwrap_or(line.len());
                        line.insert_str(
                            at,
                            &format!(
                                ", {} packets handed over ({} refusals, {} parks of the receiving workers)",
                                g.received,
                                g.refused,
                                g.workers.iter().map(|w| w.parks).sum::<u64>()
                            ),
                        );
                    }
                    (report.lost, report.locals.into_iter().flatten().collect())
                }
            };
            if let Some(e) = write_error {
                return Err(e);
            }
            // Every packet read must have been inspected (its buffer freed), else its events were never written.
            let oldest = arena.oldest_in_flight();
            if oldest < arena.filled() || lost > 0 {
                bail!(
                    "the {} scheduler left packets uninspected: packet {oldest} of {} is still held ({} lost by the \
                     policy)",
                    scheduler,
                    arena.filled(),
                    lost
                );
            }
            worker_stats.extend(locals.iter().map(|c| c.stats().clone()));
            let mut swept = None;
            pre = match reader {
                Reader::Files(mut reader) => {
                    swept = reader.take_sweeps().map(|(ctx, _)| ctx);
                    for e in reader.errors.iter().chain(&reader.warnings) {
                        eprintln!("{e}");
                    }
                    info.input_errors += reader.errors.len() as u64;
                    for (path, stats) in &reader.inputs_read {
                        note_read_end(path, stats, info);
                    }
                    info.packets_read = reader.packets_read;
                    info.capture_span = reader.capture_span();
                    reader.into_prestage()
                }
                Reader::Live(mut reader) => {
                    if let Some(e) = &reader.error {
                        eprintln!("capture error: {e} (stopped)");
                        info.input_errors += 1;
                    }
                    info.packets_read = reader.packets_read;
                    info.capture_span = reader.capture_span();
                    let queue_full = reader.queue_full;
                    note_capture(reader.source(), &cfg.live.capture, queue_full, info);
                    info.inline = inline.map(Inline::report);
                    reader.into_prestage()
                }
            };
            engine.finish(locals.into_iter().chain(swept))
        }
    };
    Ok((finished, pre))
}

/// One pass of a parallel run's collector (the calling thread, between the workers' output and the sink): the
/// merged output written out up to `watermark` (the oldest packet still being inspected; everything at the `last`
/// pass), the sink's upkeep (flushes, a reopened output), and a periodic `stats` record when capture time
/// ([`StatsBoard::max_ts`]) says one is due, the workers' counters as last published and `packets_read` so far.
/// The same under a reader thread (whose arena counts the packets read) and every worker reading (whose workers
/// do).
fn collect_pass(
    merge: &mut EventMerge,
    sink: &mut Sink,
    watermark: u64,
    last: bool,
    periodic: Option<&mut PeriodicStats>,
    board: &StatsBoard,
    packets_read: u64,
) -> anyhow::Result<()> {
    if last {
        merge.release_all(|p| sink.write_piece(p))?;
    } else {
        merge.release(watermark, |p| sink.write_piece(p))?;
    }
    sink.maintain()?;
    let ts = board.max_ts();
    if let Some(p) = periodic
        && !last
        && ts > 0
        && p.due(ts)
    {
        p.write(sink, &board.total(), packets_read)?;
    }
    Ok(())
}

/// What the collector of an `inspect_each` run holds: the merge, the sink, and the first write error.
struct Collecting<'s> {
    merge: EventMerge,
    sink: &'s mut Sink,
    write_error: Option<anyhow::Error>,
}

/// `--workers-read`: every worker reads the files and inspects its own share of `dh`'s placement
/// (`flowbundle_inspect::each`), the calling thread collecting their output in input order.
#[allow(clippy::too_many_arguments)]
fn inspect_each(
    cfg: &Config,
    files: &[PathBuf],
    n: usize,
    first_packet: u64,
    engine: &mut Engine,
    sink: &mut Sink,
    info: &mut RunInfo,
    worker_stats: &mut Vec<flowbundle_inspect::EngineStats>,
    pre: &mut Prestage,
) -> anyhow::Result<flowbundle_inspect::Finished> {
    let policy =
        flowbundle_scheduler::canonical(cfg.scheduler.as_deref().unwrap_or("lfb")).unwrap_or("dh");
    let placement = flowbundle_inspect::Placement::for_policy(policy)
        .unwrap_or(flowbundle_inspect::Placement::Fixed);
    info.threads = Some((n, format!("every worker reading the input, {policy}")));
    let (tx, merge) = EventMerge::new();
    // With thresholds, the events the filter must see come here whole (see `EventSender::whole_when`).
    let tx = match &sink.filter {
        Some(f) => tx.whole_when(f.needs()),
        None => tx,
    };
    let eve_opts = EveOptions {
        extra: cfg.eve_extra,
        ..EveOptions::default()
    };
    let render_eve = move |buf: &mut Vec<u8>, events: &[Event]| {
        flowbundle_sinks::eve::render_lines_with(buf, events, eve_opts)
    };
    let render: &Renderer = match sink.eve {
        Some(_) => &render_eve,
        None => &|_, _| {},
    };
    let stop = AtomicBool::new(false);
    let board = StatsBoard::new(n);
    let mut periodic = PeriodicStats::new(cfg.stats_interval);
    let window = (cfg.packet_buffers as u64).saturating_mul(64);
    // The collector's state, which a worker waiting for its output blocks may take to write out what can be
    // written when no other thread is at it (`EachReads::with_helper`): the output never waits for the collector's
    // own thread to be scheduled.
    let collecting = std::sync::Mutex::new(Collecting {
        merge,
        sink: &mut *sink,
        write_error: None,
    });
    let help = |watermark: u64| -> bool {
        let Ok(mut c) = collecting.try_lock() else {
            return false;
        };
        let Collecting {
            merge,
            sink,
            write_error,
        } = &mut *c;
        if write_error.is_none()
            && let Err(e) = merge.release(watermark, |p| sink.write_piece(p))
        {
            *write_error = Some(e);
            stop.store(true, Ordering::Relaxed);
        }
        true
    };
    let results = {
        let closer = tx.clone();
        let mut each =
            flowbundle_inspect::EachReads::new(engine, files, n, tx, Some(render), &stop, window)
                .numbered_from(first_packet)
                .placed_by(placement)
                .with_helper(&help);
        if periodic.is_some() {
            each = each.with_stats_board(&board);
        }
        let each = &each;
        let progress = Progress::new();
        let mut collect = |last: bool| {
            progress.show(each.packets_read(), engine, last);
            let mut c = collecting.lock().unwrap_or_else(|p| p.into_inner());
            let Collecting {
                merge,
                sink,
                write_error,
            } = &mut *c;
            // The watermark first, then the channel (see `flowbundle_inspect::each`).
            let watermark = each.watermark();
            if write_error.is_some() {
                // Nothing more is written: what the workers send is dropped, and they do not wait for it.
                merge.discard();
                return;
            }
            let r = collect_pass(
                merge,
                sink,
                watermark,
                last,
                periodic.as_mut(),
                &board,
                each.packets_read(),
            );
            if let Err(e) = r {
                *write_error = Some(e);
                stop.store(true, Ordering::Relaxed);
            }
        };
        // A worker that dies abandons the run: the others stop reading, and do not wait for the collector.
        let abandon = || {
            stop.store(true, Ordering::Relaxed);
            closer.close();
        };
        let run_cfg = StreamConfig {
            on_abort: Some(&abandon),
            ..StreamConfig::default()
        };
        let results =
            flowbundle_worker::run_each(n, &|w| each.run_worker(w), &mut collect, &run_cfg)
                .map_err(|e| anyhow::anyhow!("inspection abandoned: {e}"))?;
        let c = collecting.into_inner().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = c.write_error {
            return Err(e);
        }
        results
    };
    // What the imbalance between the workers' shares cost: each worker's waits for the others (see the loop below
    // for where it goes in the line).
    let waits = {
        let ms = |ns: u64| format!("{:.1}", ns as f64 / 1e6);
        let sweeps = results.first().map_or(0, |r| r.sweeps);
        let each = |f: &dyn Fn(&flowbundle_inspect::EachWorker) -> String| {
            results.iter().map(f).collect::<Vec<String>>().join(" / ")
        };
        // Buckets taken over only where a table moves them.
        let takeovers = if results.iter().any(|r| r.moved > 0) {
            format!(
                ", {} ms for buckets taken over ({} ms of it at the next sweep; {}; packets held back meanwhile {})",
                each(&|r| ms(r.waited_for_takeovers_ns + r.waited_for_takeovers_at_sweeps_ns)),
                each(&|r| ms(r.waited_for_takeovers_at_sweeps_ns)),
                each(&|r| r.takeovers.to_string()),
                each(&|r| r.held_back.to_string())
            )
        } else {
            String::new()
        };
        format!(
            ", waiting for the others {} ms at the end, {} ms at {sweeps} sweeps{takeovers}, {} ms a window ahead (the input's batches held for the slowest at most {:.1} MiB), {} ms for the input being read, {} ms for output blocks ({} made, output written out by the workers {} times), sweeps ended after going on {}",
            each(&|r| ms(r.waited_at_end_ns)),
            each(&|r| ms(r.waited_at_sweeps_ns)),
            each(&|r| ms(r.waited_ahead_ns)),
            results.first().map_or(0, |r| r.peak_shared_bytes) as f64 / f64::from(1u32 << 20),
            each(&|r| ms(r.waited_for_input_ns)),
            each(&|r| ms(r.waited_for_output_ns)),
            each(&|r| r.blocks_made.to_string()),
            each(&|r| r.output_written.to_string()),
            each(&|r| r.sweeps_ended_later.to_string())
        )
    };
    let mut ctxs = Vec::with_capacity(results.len());
    for (w, r) in results.into_iter().enumerate() {
        if w == 0 {
            // Every worker read the same: the first one's reading stands for the run's.
            for e in r.errors.iter().chain(&r.warnings) {
                eprintln!("{e}");
            }
            info.input_errors += r.errors.len() as u64;
            for (path, stats) in &r.inputs_read {
                note_read_end(path, stats, info);
            }
            info.packets_read = r.packets_read;
            info.capture_span = r.capture_span;
            if let (Some((_, line)), flowbundle_inspect::Placement::Balanced { .. }) =
                (info.threads.as_mut(), placement)
            {
                let at = line.rfind(", ").unwrap_or(line.len());
                line.insert_str(at, &format!(", {} buckets moved at the sweeps", r.moved));
            }
            *pre = r.prestage;
        }
        worker_stats.push(r.ctx.stats().clone());
        ctxs.push(r.ctx);
    }
    if let Some((_, line)) = info.threads.as_mut() {
        // Before the policy's name, which the summary follows with "scheduler".
        let at = line.rfind(", ").unwrap_or(line.len());
        line.insert_str(at, &waits);
    }
    Ok(engine.finish(ctxs))
}

/// The live loop of `inspect --interface --threads 1`: packets from the interface through the pre-scheduling stage
/// and the engine, one at a time, as the file loop does, until SIGINT/SIGTERM, `--count` or `--seconds`. Returns the
/// packets read.
///
/// A signal only raises a flag: the loop notices it within the capture's wait (100 ms), reads what the kernel
/// captured before it ([`flowbundle_inspect::live::Drain`]), and the flows still open are flushed and the summary is
/// written as for a file.
#[allow(clippy::too_many_arguments)]
fn inspect_live(
    cap: &mut LiveSource,
    cfg: &Config,
    engine: &mut Engine,
    ctx: &mut WorkerCtx,
    pre: &mut Prestage,
    sink: &mut Sink,
    costs: &mut CostSink,
    mut reloader: Option<&mut Reloader>,
    info: &mut RunInfo,
) -> anyhow::Result<u64> {
    let stop = flowbundle_inspect::stop_on_termination()
        .context("installing the SIGINT/SIGTERM handlers")?;
    let deadline = cfg.live.deadline();
    let limit = cfg.live.count.unwrap_or(u64::MAX);
    let (mut events, mut recs) = (Vec::new(), Vec::new());
    let mut periodic = PeriodicStats::new(cfg.stats_interval);
    let mut sweeps = flowbundle_inspect::SweepClock::new(engine.config().sweep);
    let mut num = 0u64;
    let mut drain = flowbundle_inspect::live::Drain::default();
    while num < limit && deadline.is_none_or(|d| Instant::now() < d) {
        drain.note(stop);
        // A reload loaded meanwhile applies from the next packet on: the events so far go out through the
        // thresholds of the set that made them.
        if let Some(l) = reloader.as_deref_mut().and_then(Reloader::poll) {
            ctx.take_events(&mut events);
            sink.write(&events)?;
            events.clear();
            engine.reload(l.signatures.clone(), l.rules.clone());
            sink.adopt(&l, info);
            if let Some(r) = reloader.as_deref_mut() {
                r.applied(&l);
            }
        }
        if num.is_multiple_of(256) {
            sink.maintain()?;
        }
        let rec = match cap.next_packet() {
            Ok(Some((_, r))) => r,
            // Stopped, and nothing captured before the stop is left.
            Ok(None) if drain.draining() => break,
            Ok(None) => {
                // A quiet link: what is pending goes out now.
                ctx.take_events(&mut events);
                sink.write(&events)?;
                events.clear();
                sink.maintain()?;
                continue;
            }
            Err(e) => {
                eprintln!("capture error: {e} (stopping)");
                break;
            }
        };
        if !drain.keeps(rec.ts_ns) {
            break;
        }
        engine.process_serial(ctx, pre, num, &rec);
        num += 1;
        if let Some(now) = sweeps.packet(rec.ts_ns) {
            engine.expire_serial(ctx, now);
        }
        // A live packet's timestamp is the wall clock at capture: records come every interval of real time while
        // traffic flows.
        if let Some(p) = periodic.as_mut()
            && p.due(rec.ts_ns)
        {
            ctx.take_events(&mut events);
            sink.write(&events)?;
            events.clear();
            p.write(sink, ctx.stats(), num)?;
        }
        if ctx.pending_events() >= 64 {
            ctx.take_events(&mut events);
            sink.write(&events)?;
            events.clear();
        }
        if num.is_multiple_of(4096) {
            ctx.take_cost_records(&mut recs);
            costs.write(&recs)?;
            recs.clear();
        }
    }
    ctx.take_events(&mut events);
    sink.write(&events)?;
    Ok(num)
}

/// The reader thread's side of a streaming run: files or an interface.
enum Reader<'a> {
    Files(Box<StreamReader<'a>>),
    Live(Box<LiveReader<'a>>),
}

impl Reader<'_> {
    fn next_desc(
        &mut self,
        crew: Option<&Broadcast<'_>>,
        help: Option<&flowbundle_inspect::Help<'_>>,
    ) -> Option<flowbundle_scheduler::Desc> {
        match self {
            Reader::Files(r) => r.next_desc(crew, help),
            Reader::Live(r) => r.next_desc(),
        }
    }
}

/// The end of a run's EVE output: flushed and closed (an EVE output's counters go into the last report). Returns,
/// with an EVE output, how many lines were written and where, when the output names it.
pub fn finish_eve(
    eve: Option<flowbundle_sinks::EveWriter<crate::Output>>,
    reports: &mut [Report],
) -> anyhow::Result<Option<(u64, Option<String>)>> {
    let mut written = None;
    if let Some(w) = eve {
        let lines = w.lines();
        let counters = w
            .into_inner()
            .context("flushing EVE output")?
            .finish_counted()?;
        if let Some(r) = reports.last_mut() {
            r.2.eve_output = counters.clone();
        }
        written = Some((lines, counters.map(|c| c.target)));
    }
    Ok(written)
}

/// One line on standard error: `lines` EVE events written to `out`, and the packets, flows and time of `reports`.
pub fn note_written(lines: u64, out: &str, reports: &[Report]) {
    let packets: u64 = reports.iter().map(|r| r.2.packets_read).sum();
    let flows: u64 = reports.iter().map(|r| r.0.stats.flows_created).sum();
    let secs: f64 = reports
        .iter()
        .filter_map(|r| r.2.elapsed)
        .map(|d| d.as_secs_f64())
        .sum();
    eprintln!("wrote {lines} EVE events to {out}: {packets} packets, {flows} flows in {secs:.2} s");
}
