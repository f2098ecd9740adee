//! # The engine's layers, measured: instructions and code lines per layer from callgrind
//!
//! The execution models ([`crate::exec`]) split a packet's cost over the engine's state layers (packet, flow,
//! stream, app, detect) and give each layer a code footprint that runs through a per-core L1i. Those numbers are
//! measured here on flowbundle's own engine, not taken from the Snort-MT figures of the Verdú thesis:
//!
//! 1. `valgrind --tool=callgrind --dump-instr=yes --dump-after=<the engine's per-packet entry>` runs the
//!    single-threaded `flowbundle inspect` and writes one profile *per packet* (`scripts/exec-layers` does it).
//!    Each profile lists every instruction executed while that packet was inspected, with its count, the source file
//!    its line table names (inlined code keeps its own file) and its function, and every call with its inclusive
//!    count.
//! 2. [`classify`] places a source file in a layer by where it lives in the workspace: `crates/decode` is the packet
//!    layer, the connection table and the engine's loop (`crates/inspect/src/{engine,table,flow,...}.rs`) the flow
//!    layer, `reassembly.rs` the stream layer, the parsers and signatures (`crates/protocols`, `crates/signatures`,
//!    `crates/inspect/src/app.rs`) the app layer, `crates/rules` detection. Capture reading (`crates/ingest`) and
//!    output (`crates/sinks`, the binary) are counted apart. Code from outside the workspace (the standard library,
//!    hashbrown, memchr, regex) belongs to whoever called it: its instructions are attributed to the layers of its
//!    call sites, in proportion to the calls' inclusive counts, through chains of such calls ([`Profile::mix`]).
//! 3. Per packet and layer: instructions, and the distinct 64-byte code lines executed (what one *visit* of the
//!    layer fetches). Over the run: each layer's distinct code lines (its footprint). A layer's visits are the
//!    packets of its class ([`crate::exec::Visits`]: every packet, TCP packets, packets with payload), read from the
//!    same capture.
//!
//! [`LayerMeasures::apply`] turns the measures into the simulator's layer parameters: cost shares in proportion to
//! instructions per visit, `code_lines` the footprint, `code_touch` the mean lines per visit.
//!
//! Instruction counts say nothing of stalls, and a line executed is not a line fetched from memory: what the model
//! does with them is the cache model's business. Instructions are a fair proxy for a layer's share of the cycles only
//! where stalls are spread alike; the D-cache side stays the model's (state lines per layer are not measured here).

use std::collections::HashMap;

/// The layers, in processing order, as [`crate::exec::ExecParams::engine`] names them.
pub const LAYERS: [&str; 5] = ["packet", "flow", "stream", "app", "detect"];

/// Where an instruction's cost goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Part {
    /// One of [`LAYERS`].
    Layer(u8),
    /// Capture reading (`crates/ingest`).
    Read,
    /// Output: EVE rendering and the summary (`crates/sinks`, `crates/cli`, the alert filter).
    Output,
    /// Detection's content scan (`crates/rules/src/prefilter.rs`: the prefilter's pass over the bytes), a part of
    /// the detect layer measured apart for the split scan ([`ScanMeasures`]).
    Scan,
    /// Code outside the workspace or shared by every stage (the vocabulary types, events): its caller's.
    External,
    /// External code whose callers could not be traced (program start-up, thread entry points).
    Unattributed,
}

/// Parts a cost can end in (everything but [`Part::External`]), in a fixed order, [`Part::Unattributed`] last.
const PARTS: usize = LAYERS.len() + 4;

/// The index of [`Part::Scan`], and of the detect layer it is part of.
const SCAN: usize = LAYERS.len() + 2;
const DETECT: usize = LAYERS.len() - 1;

fn part_index(p: Part) -> Option<usize> {
    match p {
        Part::Layer(l) => Some(usize::from(l)),
        Part::Read => Some(LAYERS.len()),
        Part::Output => Some(LAYERS.len() + 1),
        Part::Scan => Some(SCAN),
        Part::Unattributed => Some(LAYERS.len() + 3),
        Part::External => None,
    }
}

/// The part a source file belongs to, from its path (absolute, or relative to the workspace root).
pub fn classify(file: &str) -> Part {
    let Some(at) = file.find("crates/") else {
        return Part::External;
    };
    // Only the workspace's own crates: `crates/<name>/src/…` (the registry's sources live under
    // `index.crates.io-…/<crate>-<version>/`, never under a `crates/` directory of this layout).
    let rel = &file[at + "crates/".len()..];
    let (krate, rest) = match rel.split_once('/') {
        Some(("lab", r)) => match r.split_once('/') {
            Some((k, r)) => (k, r),
            None => return Part::External,
        },
        Some(x) => x,
        None => return Part::External,
    };
    let module = rest.strip_prefix("src/").unwrap_or(rest);
    match krate {
        "decode" => Part::Layer(0),
        "ingest" => Part::Read,
        "inspect" => match module {
            "reassembly.rs" => Part::Layer(2),
            "app.rs" | "detect.rs" => Part::Layer(3),
            "engine.rs" | "table.rs" | "flow.rs" | "sweep.rs" | "expect.rs" | "cost.rs"
            | "config.rs" | "prestage.rs" => Part::Layer(1),
            "alert_filter.rs" => Part::Output,
            // Events, the runtime adapters, the library root: shared, the caller's.
            _ => Part::External,
        },
        "protocols" | "signatures" => Part::Layer(3),
        "rules" if module == "prefilter.rs" || module == "gate.rs" => Part::Scan,
        "rules" => Part::Layer(4),
        "sinks" | "cli" => Part::Output,
        _ => Part::External,
    }
}

/// The part of a function from its symbol (`flowbundle_rules::prefilter::PatternSet::scan`, or an `impl` block's
/// `<flowbundle_rules::RuleSet as ...>::f`): where the source file of an instruction is not the workspace's (the
/// standard library's iterators inlined into a workspace function), the function it was compiled into decides.
/// Generic code instantiated for a workspace type (`core::ptr::drop_in_place<flowbundle_...>`) is not the
/// workspace's: its callers decide.
pub fn classify_fn(name: &str) -> Part {
    let n = name.strip_prefix('<').unwrap_or(name);
    let Some(rest) = n.strip_prefix("flowbundle") else {
        return Part::External;
    };
    let (krate, path) = match rest.strip_prefix('_') {
        Some(r) => r.split_once("::").unwrap_or((r, "")),
        // The binary's crate, `flowbundle::cmd::...`.
        None if rest.starts_with("::") => ("cli", ""),
        None => return Part::External,
    };
    let module = path.split("::").next().unwrap_or("");
    if krate == "rules" && name.contains("{{closure}}") {
        // A closure of the rules crate runs for whoever calls it (the prefilter calls the scanner's hit collectors):
        // its caller's part, as external code.
        return Part::External;
    }
    let file = if krate == "inspect" || (krate == "rules" && matches!(module, "prefilter" | "gate"))
    {
        format!("crates/{krate}/src/{module}.rs")
    } else {
        format!("crates/{krate}/src/lib.rs")
    };
    match krate {
        "trace" | "bench" | "sim" | "hetero" => classify(&format!("crates/lab/{krate}/src/lib.rs")),
        _ => classify(&file),
    }
}

/// One call: from a function, at a call site in a part, to a function, with the inclusive instruction count.
#[derive(Clone, Debug)]
struct Call {
    caller: u32,
    site: Part,
    callee: u32,
    inclusive: u64,
    /// Times the call was made.
    count: u64,
}

/// One callgrind profile, reduced: per instruction its address, function, part and count; the calls.
#[derive(Clone, Debug, Default)]
pub struct Dump {
    /// (address, function, part, instructions executed).
    pub instrs: Vec<(u64, u32, Part, u64)>,
    calls: Vec<Call>,
}

impl Dump {
    /// Every instruction of the profile (its threads' total when it is one thread's).
    pub fn total(&self) -> u64 {
        self.instrs.iter().map(|&(_, _, _, n)| n).sum()
    }

    /// Calls into functions whose name `pick` accepts, from functions it does not (so a function's calls to itself,
    /// or from one picked function to another, are not counted twice): the number of calls and their inclusive
    /// instructions.
    pub fn calls_into(&self, names: &Names, pick: &dyn Fn(&str) -> bool) -> (u64, u64) {
        let picked = |f: u32| names.names.get(f as usize).is_some_and(|n| pick(n));
        self.calls
            .iter()
            .filter(|c| picked(c.callee) && !picked(c.caller))
            .fold((0, 0), |(k, n), c| (k + c.count, n + c.inclusive))
    }
}

/// Function names shared by every dump of a run (ids in [`Dump::instrs`]).
#[derive(Clone, Debug, Default)]
pub struct Names {
    ids: HashMap<String, u32>,
    pub names: Vec<String>,
}

impl Names {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.ids.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), i);
        i
    }
}

/// Why a profile could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("line {0}: {1}")]
    Line(usize, String),
    #[error("not a callgrind profile with instruction positions (run with --dump-instr=yes)")]
    Positions,
}

/// A number of a position column: absolute (decimal or 0x-hex), or relative to the previous value (`+n`, `-n`,
/// `*`).
fn position(tok: &str, last: u64) -> Option<u64> {
    if tok == "*" {
        return Some(last);
    }
    let abs = |t: &str| {
        t.strip_prefix("0x").map_or_else(
            || t.parse::<u64>().ok(),
            |h| u64::from_str_radix(h, 16).ok(),
        )
    };
    if let Some(r) = tok.strip_prefix('+') {
        return abs(r).map(|n| last.wrapping_add(n));
    }
    if let Some(r) = tok.strip_prefix('-') {
        return abs(r).map(|n| last.wrapping_sub(n));
    }
    abs(tok)
}

/// A compressed name: `(id) name` defines `id`, `(id)` refers to it, a bare name is itself.
fn decompress<T: Copy>(
    table: &mut HashMap<String, T>,
    v: &str,
    make: &mut dyn FnMut(&str) -> T,
) -> Option<T> {
    let v = v.trim();
    if let Some(rest) = v.strip_prefix('(')
        && let Some((id, name)) = rest.split_once(')')
    {
        let name = name.trim();
        if name.is_empty() {
            return table.get(id).copied();
        }
        let x = make(name);
        table.insert(id.to_string(), x);
        return Some(x);
    }
    Some(make(v))
}

/// Reads a callgrind profile written with `--dump-instr=yes` (positions `instr` or `instr line`; the first event
/// is taken as the instruction count). Function names go into `names`.
pub fn parse(text: &str, names: &mut Names) -> Result<Dump, ParseError> {
    let mut dump = Dump::default();
    // Name compression: "(id) name" defines, "(id)" refers; files and functions have separate tables.
    let mut files: HashMap<String, Part> = HashMap::new();
    let mut fns: HashMap<String, u32> = HashMap::new();
    let mut columns = 0usize;
    let mut has_instr = false;
    let mut file_part = Part::External;
    let mut func: u32 = names.id("(unknown)");
    let mut fn_part = Part::External;
    let mut fn_parts: HashMap<u32, Part> = HashMap::new();
    let mut callee: Option<u32> = None;
    let mut pending_call = false;
    let mut pending_count = 0u64;
    let mut last = [0u64; 2];
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let first = line.as_bytes()[0];
        if first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'*') {
            if !has_instr {
                return Err(ParseError::Positions);
            }
            let mut toks = line.split_ascii_whitespace();
            let mut pos = [0u64; 2];
            for (k, p) in pos.iter_mut().enumerate().take(columns) {
                let t = toks
                    .next()
                    .ok_or_else(|| ParseError::Line(n + 1, "missing position".into()))?;
                *p = position(t, last[k])
                    .ok_or_else(|| ParseError::Line(n + 1, format!("bad position {t}")))?;
                last[k] = *p;
            }
            let cost = toks.next().map_or(Some(0), |t| t.parse::<u64>().ok());
            let cost = cost.ok_or_else(|| ParseError::Line(n + 1, "bad cost".into()))?;
            // The scan's functions keep what is inlined into them (the hit collectors the scanner passes in); a rules
            // closure is its caller's, wherever its code was written.
            let part = if fn_part == Part::Scan
                || file_part == Part::External
                || (fn_part == Part::External && file_part == Part::Layer(4))
            {
                fn_part
            } else {
                file_part
            };
            if pending_call {
                pending_call = false;
                if let Some(c) = callee.take() {
                    dump.calls.push(Call {
                        caller: func,
                        site: part,
                        callee: c,
                        inclusive: cost,
                        count: pending_count,
                    });
                }
            } else {
                dump.instrs.push((pos[0], func, part, cost));
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=').or_else(|| line.split_once(':')) else {
            return Err(ParseError::Line(n + 1, "unrecognised line".into()));
        };
        match key {
            "positions" => {
                let cols: Vec<&str> = value.split_ascii_whitespace().collect();
                has_instr = cols.first().is_some_and(|c| *c == "instr" || *c == "addr");
                columns = cols.len().min(2);
            }
            "fl" | "fi" | "fe" => {
                file_part = decompress(&mut files, value, &mut classify).unwrap_or(Part::External);
            }
            "fn" => {
                func = decompress(&mut fns, value, &mut |s| names.id(s))
                    .unwrap_or_else(|| names.id("(unknown)"));
                fn_part = *fn_parts.entry(func).or_insert_with(|| {
                    names
                        .names
                        .get(func as usize)
                        .map_or(Part::External, |n| classify_fn(n))
                });
            }
            "cfn" => callee = decompress(&mut fns, value, &mut |s| names.id(s)),
            "cfi" | "cfl" => {
                // Defines a file name for later references; the call's site is the current file.
                let _ = decompress(&mut files, value, &mut classify);
            }
            "calls" => {
                pending_call = true;
                pending_count = value
                    .split_ascii_whitespace()
                    .next()
                    .and_then(|t| t.parse().ok())
                    .unwrap_or(0);
                // The target position of the call ("calls=N target"): absolute, does not move the site's positions.
            }
            "jump" | "jcnd" | "jfi" | "jfn" | "ob" | "cob" | "version" | "creator" | "pid"
            | "cmd" | "part" | "desc" | "events" | "event" | "summary" | "totals" | "thread" => {}
            _ => {}
        }
    }
    Ok(dump)
}

/// Several dumps' calls together: how external code's instructions are attributed to parts.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    /// Per function: the parts its callers' sites belong to, normalised (sums to 1; see [`Profile::mix`]).
    mix: HashMap<u32, [f64; PARTS]>,
}

impl Profile {
    /// Attribution of every external function in `dumps`: per function, the inclusive counts of the calls into it
    /// by the part of each call site; a site in external code passes on its own function's attribution. Iterated
    /// to a fixed point (chains of external calls); a function nobody calls is [`Part::Unattributed`].
    pub fn new<'a>(dumps: impl IntoIterator<Item = &'a Dump>) -> Self {
        let mut into: HashMap<u32, Vec<(u32, Part, u64)>> = HashMap::new();
        let mut agg: HashMap<(u32, Part, u32), u64> = HashMap::new();
        for d in dumps {
            for c in &d.calls {
                *agg.entry((c.caller, c.site, c.callee)).or_default() += c.inclusive;
            }
        }
        for ((caller, site, callee), w) in agg {
            into.entry(callee).or_default().push((caller, site, w));
        }
        let mut mix: HashMap<u32, [f64; PARTS]> = HashMap::new();
        let unattributed = {
            let mut m = [0.0; PARTS];
            m[PARTS - 1] = 1.0;
            m
        };
        for _ in 0..64 {
            let mut changed = false;
            for (&callee, edges) in &into {
                let mut m = [0.0; PARTS];
                for &(caller, site, w) in edges {
                    let from = match part_index(site) {
                        Some(i) => {
                            let mut o = [0.0; PARTS];
                            o[i] = 1.0;
                            o
                        }
                        None if caller == callee => continue,
                        None => *mix.get(&caller).unwrap_or(&unattributed),
                    };
                    for (a, b) in m.iter_mut().zip(from) {
                        *a += w as f64 * b;
                    }
                }
                let total: f64 = m.iter().sum();
                let m = if total > 0.0 {
                    m.map(|x| x / total)
                } else {
                    unattributed
                };
                let old = mix.insert(callee, m);
                if old.is_none_or(|o| o.iter().zip(m).any(|(a, b)| (a - b).abs() > 1e-9)) {
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        Profile { mix }
    }

    /// How the instructions of external function `f` divide over the parts.
    pub fn mix(&self, f: u32) -> [f64; PARTS] {
        self.mix.get(&f).copied().unwrap_or_else(|| {
            let mut m = [0.0; PARTS];
            m[PARTS - 1] = 1.0;
            m
        })
    }

    /// One dump's instructions per part, and per part its distinct code lines (an external function's lines count
    /// in every part that has at least 5% of its attribution).
    pub fn split(&self, d: &Dump) -> ([f64; PARTS], Vec<Vec<u64>>) {
        let mut instr = [0.0; PARTS];
        let mut lines: Vec<Vec<u64>> = vec![Vec::new(); PARTS];
        for &(addr, f, part, n) in &d.instrs {
            match part_index(part) {
                Some(i) => {
                    instr[i] += n as f64;
                    lines[i].push(addr >> 6);
                }
                None => {
                    let m = self.mix(f);
                    for (i, share) in m.iter().enumerate() {
                        instr[i] += n as f64 * share;
                        if *share >= 0.05 {
                            lines[i].push(addr >> 6);
                        }
                    }
                }
            }
        }
        for l in &mut lines {
            l.sort_unstable();
            l.dedup();
        }
        (instr, lines)
    }
}

/// What one layer measured.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LayerMeasure {
    pub name: String,
    /// Packets of the layer's class ([`crate::exec::Visits`]) among those measured.
    pub visits: u64,
    /// Instructions per visit (the layer's instructions in its class's packets, over their number).
    pub instructions_per_visit: f64,
    /// Instructions of this layer in packets outside its class, per measured packet (e.g. the app layer's check of a
    /// packet without payload).
    pub outside_per_packet: f64,
    /// Distinct 64-byte code lines the layer executed over the measured packets (its footprint).
    pub code_lines: u64,
    /// Distinct code lines per visit, mean.
    pub lines_per_visit: f64,
}

/// Detection's content scan within the detect layer ([`Part::Scan`]), per visit of the detect layer: what
/// [`crate::exec::SplitScan::measured`] cuts off as the stateless scan.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScanMeasures {
    /// The scan's instructions per detect visit (included in the detect layer's).
    pub instructions_per_visit: f64,
    /// The scan's distinct code lines over the run (included in the detect layer's footprint), and per visit.
    pub code_lines: u64,
    pub lines_per_visit: f64,
}

/// Every layer's measures, and what reading and output cost beside them.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LayerMeasures {
    /// Where they come from (the command, the trace, the rules).
    pub source: String,
    pub packets: u64,
    pub layers: Vec<LayerMeasure>,
    /// Instructions per packet of capture reading, output, and external code nobody traceable called.
    pub read_per_packet: f64,
    pub output_per_packet: f64,
    pub unattributed_per_packet: f64,
    /// The content scan's part of the detect layer (absent from measurements made before it was measured apart).
    #[serde(default)]
    pub scan: Option<ScanMeasures>,
}

/// A measured packet's class: its IP protocol and payload length (the facts [`crate::exec::Visits`] reads).
#[derive(Clone, Copy, Debug)]
pub struct PacketClass {
    pub proto: u8,
    pub payload: u32,
}

impl LayerMeasures {
    /// Measures from per-packet dumps (`dumps[k]` is packet `classes[k]`), attributing external code with
    /// `profile`.
    pub fn measure(
        source: &str,
        profile: &Profile,
        dumps: impl IntoIterator<Item = (PacketClass, Dump)>,
        visits: &[crate::exec::Visits],
    ) -> LayerMeasures {
        let n = LAYERS.len();
        let mut instr_in = vec![0.0; n];
        let mut instr_out = vec![0.0; n];
        let mut lines_in = vec![0u64; n];
        let mut visit_count = vec![0u64; n];
        let mut footprint: Vec<std::collections::HashSet<u64>> = vec![Default::default(); n];
        let (mut read, mut output, mut unattributed, mut packets) = (0.0, 0.0, 0.0, 0u64);
        let visited = |l: usize, class: PacketClass| match visits
            .get(l)
            .copied()
            .unwrap_or(crate::exec::Visits::All)
        {
            crate::exec::Visits::All => true,
            crate::exec::Visits::Tcp => class.proto == 6,
            // A layer's instructions per visit are its payload packets' where it runs for every packet but costs
            // only with payload (`Visits::Rules`).
            crate::exec::Visits::Payload | crate::exec::Visits::Rules => class.payload > 0,
        };
        let (mut scan_instr, mut scan_lines) = (0.0, 0u64);
        let mut scan_footprint = std::collections::HashSet::new();
        for (class, d) in dumps {
            packets += 1;
            let (mut instr, mut lines) = profile.split(&d);
            // The scan is part of the detect layer: measured apart, then folded into it.
            scan_footprint.extend(lines[SCAN].iter().copied());
            if visited(DETECT, class) {
                scan_instr += instr[SCAN];
                scan_lines += lines[SCAN].len() as u64;
            }
            instr[DETECT] += instr[SCAN];
            let scan = std::mem::take(&mut lines[SCAN]);
            lines[DETECT].extend(scan);
            lines[DETECT].sort_unstable();
            lines[DETECT].dedup();
            for l in 0..n {
                let visited = visited(l, class);
                footprint[l].extend(lines[l].iter().copied());
                if visited {
                    visit_count[l] += 1;
                    instr_in[l] += instr[l];
                    lines_in[l] += lines[l].len() as u64;
                } else {
                    instr_out[l] += instr[l];
                }
            }
            read += instr[n];
            output += instr[n + 1];
            unattributed += instr[PARTS - 1];
        }
        let per = |x: f64, k: u64| if k == 0 { 0.0 } else { x / k as f64 };
        LayerMeasures {
            source: source.to_string(),
            packets,
            layers: (0..n)
                .map(|l| LayerMeasure {
                    name: LAYERS[l].to_string(),
                    visits: visit_count[l],
                    instructions_per_visit: per(instr_in[l], visit_count[l]),
                    outside_per_packet: per(instr_out[l], packets),
                    code_lines: footprint[l].len() as u64,
                    lines_per_visit: per(lines_in[l] as f64, visit_count[l]),
                })
                .collect(),
            read_per_packet: per(read, packets),
            output_per_packet: per(output, packets),
            unattributed_per_packet: per(unattributed, packets),
            scan: Some(ScanMeasures {
                instructions_per_visit: per(scan_instr, visit_count[DETECT]),
                code_lines: scan_footprint.len() as u64,
                lines_per_visit: per(scan_lines as f64, visit_count[DETECT]),
            }),
        }
    }

    /// The simulator's layers with these measures: cost shares in proportion to instructions per visit, code
    /// footprints and lines per visit as measured; everything else (state shares, visits, payload) kept from
    /// `base`, whose layers must be [`LAYERS`] in order.
    pub fn apply(&self, base: &crate::exec::ExecParams) -> Result<crate::exec::ExecParams, String> {
        let names: Vec<&str> = base.layers.iter().map(|l| l.name.as_str()).collect();
        let measured: Vec<&str> = self.layers.iter().map(|l| l.name.as_str()).collect();
        if names != measured {
            return Err(format!(
                "measured layers {measured:?} do not match the model's {names:?}"
            ));
        }
        let total: f64 = self.layers.iter().map(|l| l.instructions_per_visit).sum();
        if !(total.is_finite() && total > 0.0) {
            return Err("no instructions measured".into());
        }
        let mut p = base.clone();
        for (l, m) in p.layers.iter_mut().zip(&self.layers) {
            l.cost_share = m.instructions_per_visit / total;
            l.code_lines = u32::try_from(m.code_lines).unwrap_or(u32::MAX).max(1);
            l.code_touch = (m.lines_per_visit.round() as u32).min(l.code_lines);
        }
        p.validate()?;
        Ok(p)
    }

    /// The content scan's share of the detect layer: of its instructions per visit, and of its code footprint.
    /// (0, 0) when the measurement has no scan or no detect layer.
    pub fn scan_shares(&self) -> (f64, f64) {
        let (Some(scan), Some(det)) = (&self.scan, self.layers.iter().find(|l| l.name == "detect"))
        else {
            return (0.0, 0.0);
        };
        let ratio = |a: f64, b: f64| {
            if b > 0.0 {
                (a / b).clamp(0.0, 1.0)
            } else {
                0.0
            }
        };
        (
            ratio(scan.instructions_per_visit, det.instructions_per_visit),
            ratio(scan.code_lines as f64, det.code_lines as f64),
        )
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// One line per layer.
    pub fn table(&self) -> String {
        let mut s = String::from(
            "| layer | visits | instructions / visit | share | outside its class / packet | code lines (KB) | lines / visit (KB) |\n\
             |---|---|---|---|---|---|---|\n",
        );
        let total: f64 = self.layers.iter().map(|l| l.instructions_per_visit).sum();
        for l in &self.layers {
            s.push_str(&format!(
                "| {} | {} | {:.0} | {:.1}% | {:.0} | {} ({:.1}) | {:.0} ({:.1}) |\n",
                l.name,
                l.visits,
                l.instructions_per_visit,
                100.0 * l.instructions_per_visit / total.max(1e-9),
                l.outside_per_packet,
                l.code_lines,
                l.code_lines as f64 * 64.0 / 1024.0,
                l.lines_per_visit,
                l.lines_per_visit * 64.0 / 1024.0,
            ));
        }
        if let Some(scan) = &self.scan {
            let (share, code) = self.scan_shares();
            s.push_str(&format!(
                "\nof which the content scan (prefilter): {:.0} instructions / detect visit ({:.1}% of detection), {} code lines ({:.1}%), {:.0} lines / visit\n",
                scan.instructions_per_visit,
                share * 100.0,
                scan.code_lines,
                code * 100.0,
                scan.lines_per_visit
            ));
        }
        s.push_str(&format!(
            "\n{} packets; per packet besides the layers: reading {:.0}, output {:.0}, unattributed {:.0} instructions\n",
            self.packets, self.read_per_packet, self.output_per_packet, self.unattributed_per_packet
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layers `scripts/bench-exec` falls back to, measured with the 10k set on each profile, read and apply; a
    /// profile's packets split their work their own way (dominant's HTTP elephant needs little identification).
    #[test]
    fn the_layers_measured_per_profile_read_and_apply() {
        let read = |text: &str| {
            let m = LayerMeasures::from_json(text).unwrap();
            m.apply(&crate::exec::ExecParams::engine()).unwrap();
            let per = |name: &str| {
                m.layers
                    .iter()
                    .find(|l| l.name == name)
                    .unwrap()
                    .instructions_per_visit
            };
            (per("app"), per("detect"))
        };
        let dominant = read(include_str!("../data/layers-10k-dominant.json"));
        let balanced = read(include_str!("../data/layers-10k-balanced.json"));
        assert!(dominant.0 < 0.5 * balanced.0, "{dominant:?} {balanced:?}");
        assert!(dominant.1 > 2.0 * dominant.0, "{dominant:?}");
    }

    #[test]
    fn files_fall_in_their_layers() {
        assert_eq!(classify("/work/x/crates/decode/src/tcp.rs"), Part::Layer(0));
        assert_eq!(classify("crates/inspect/src/reassembly.rs"), Part::Layer(2));
        assert_eq!(classify("crates/inspect/src/engine.rs"), Part::Layer(1));
        assert_eq!(classify("crates/protocols/src/http/mod.rs"), Part::Layer(3));
        assert_eq!(classify("crates/rules/src/prefilter.rs"), Part::Scan);
        assert_eq!(classify("crates/rules/src/scan.rs"), Part::Layer(4));
        assert_eq!(classify("crates/rules/src/gate.rs"), Part::Scan);
        assert_eq!(
            classify_fn("flowbundle_rules::scan::Scanner::scan_packet::{{closure}}"),
            Part::External
        );
        assert_eq!(classify("crates/ingest/src/pcap.rs"), Part::Read);
        assert_eq!(classify("crates/sinks/src/eve.rs"), Part::Output);
        assert_eq!(classify("crates/inspect/src/event.rs"), Part::External);
        assert_eq!(
            classify("/root/.cargo/registry/src/index.crates.io-1/hashbrown-0.15.2/src/raw/mod.rs"),
            Part::External
        );
        assert_eq!(
            classify("/rustc/abc/library/core/src/slice/mod.rs"),
            Part::External
        );
        assert_eq!(
            classify_fn("flowbundle_rules::prefilter::PatternSet::loop_mixed"),
            Part::Scan
        );
        assert_eq!(
            classify_fn("flowbundle_rules::scan::Scanner::scan_stream"),
            Part::Layer(4)
        );
        assert_eq!(
            classify_fn("<flowbundle_inspect::reassembly::Dir as core::fmt::Debug>::fmt"),
            Part::Layer(2)
        );
        assert_eq!(classify_fn("flowbundle::cmd::inspect::run"), Part::Output);
        assert_eq!(
            classify_fn("core::ptr::drop_in_place<flowbundle_inspect::engine::Engine>"),
            Part::External
        );
        assert_eq!(classify_fn("memcpy"), Part::External);
    }

    /// A profile in callgrind's format with name compression, relative positions, inlined files and calls.
    const SAMPLE: &str = "\
version: 1
creator: callgrind-3.22
positions: instr line
events: Ir
summary: 100

ob=(1) /bin/flowbundle
fl=(1) /w/crates/inspect/src/engine.rs
fn=(1) flowbundle_inspect::engine::Engine::process_serial
0x1000 10 5
+4 * 3
fi=(2) /w/crates/decode/src/ip.rs
+4 20 7
fe=(1)
+4 12 1
cfl=(3) /rustc/x/library/core/src/ptr/mod.rs
cfn=(2) memcpy
calls=2 0x9000 1
+4 13 40
+4 14 1
fl=(3)
fn=(2)
0x9000 1 40
";

    #[test]
    fn a_profile_reads_with_compression_and_calls() {
        let mut names = Names::default();
        let d = parse(SAMPLE, &mut names).unwrap();
        let addrs: Vec<(u64, Part, u64)> = d.instrs.iter().map(|&(a, _, p, n)| (a, p, n)).collect();
        assert_eq!(
            addrs,
            vec![
                (0x1000, Part::Layer(1), 5),
                (0x1004, Part::Layer(1), 3),
                (0x1008, Part::Layer(0), 7),
                (0x100c, Part::Layer(1), 1),
                (0x1014, Part::Layer(1), 1),
                (0x9000, Part::External, 40),
            ]
        );
        assert_eq!(d.calls.len(), 1);
        assert_eq!(d.calls[0].site, Part::Layer(1));
        assert_eq!(d.calls[0].inclusive, 40);
        let p = Profile::new([&d]);
        let (instr, lines) = p.split(&d);
        // memcpy's 40 instructions go to the flow layer that called it.
        assert_eq!(instr[1], 5.0 + 3.0 + 1.0 + 1.0 + 40.0);
        assert_eq!(instr[0], 7.0);
        assert_eq!(lines[1], vec![0x1000 >> 6, 0x9000 >> 6]);
    }

    #[test]
    fn external_chains_follow_their_first_classified_caller() {
        let mk = |caller, site, callee, inclusive| Call {
            caller,
            site,
            callee,
            inclusive,
            count: 1,
        };
        let d = Dump {
            instrs: vec![(0, 3, Part::External, 10), (64, 4, Part::External, 10)],
            calls: vec![
                mk(1, Part::Layer(4), 3, 30),
                mk(2, Part::Layer(3), 3, 10),
                mk(3, Part::External, 4, 20),
            ],
        };
        let p = Profile::new([&d]);
        let m = p.mix(4);
        assert!(
            (m[4] - 0.75).abs() < 1e-9 && (m[3] - 0.25).abs() < 1e-9,
            "{m:?}"
        );
        assert_eq!(p.mix(99)[PARTS - 1], 1.0);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut names = Names::default();
        assert!(parse("positions: line\nevents: Ir\n10 5\n", &mut names).is_err());
        assert!(parse("positions: instr\nevents: Ir\n0xzz 1\n", &mut names).is_err());
        assert!(parse("what is this\n", &mut names).is_err());
        assert!(parse("", &mut names).unwrap().instrs.is_empty());
    }
}
