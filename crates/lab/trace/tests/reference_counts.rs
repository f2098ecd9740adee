//! `trace stats` against the reference tools on every capture of `shared/data/ndpi/pcap`.
//!
//! Each counter is compared with the one tool whose definition is ours, so that an agreement means something:
//!
//! | counter | ours | reference |
//! |---|---|---|
//! | `packets` | records read | tshark: frames |
//! | `ip_packets` | packets with a decoded IPv4/IPv6 header | tshark: frames with an `ip`/`ipv6` layer |
//! | `tcp_packets`, `udp_packets` | IP packets whose transport (after IPv6 extension headers) is TCP/UDP, later fragments excluded | tshark: the first transport layer after the first IP layer |
//! | `vlan_packets` | packets with at least one 802.1Q/802.1ad tag | tshark: a `vlan` layer before the first IP layer |
//! | `fragmented_packets` | IP fragments, first or not, v4 and v6 | tshark (reassembly off): the first IP layer has MF set or an offset, or an IPv6 fragment header |
//! | `unique_flows` | distinct canonical 5-tuples over the capture | ndpiReader: `Unique flows` |
//!
//! tshark runs with IP reassembly off, so each frame shows its own fragment fields. ndpiReader's packet counters are
//! not used: its "IP packets" leaves out non-first IPv4 fragments and packets cut by the snap length, its
//! "Fragmented" counts only non-first IPv4 fragments, and its "TCP" counts packets inside IP-in-IP: different
//! quantities, not different answers. Its flow count is the reference for flows (tshark has none).
//!
//! Every difference must be listed in `tests/fixtures/reference_differences.tsv` (file, counter, ours, theirs,
//! reason) with both values exactly; `theirs` is `none` when the tool printed no count. A listed difference that
//! no longer occurs fails the test too, so the list stays true. A missing tool skips its counters with a message;
//! the flow differences are nDPI 4.2's (Debian bookworm's libndpi-bin), and with another nDPI release they are
//! printed but not enforced.
//!
//! The tools run in parallel (a few processes per core: they spend much of their time starting up).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use flowbundle_trace::stats::{StatsConfig, TraceStats, stats_file};

const TSHARK_COUNTERS: &[&str] = &[
    "packets",
    "ip_packets",
    "tcp_packets",
    "udp_packets",
    "vlan_packets",
    "fragmented_packets",
];
const NDPI_COUNTERS: &[&str] = &["unique_flows"];

fn fixture_path() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/reference_differences.tsv"
    ))
}

/// tshark's counts, from one line of fields per frame.
fn tshark_counts(path: &Path) -> BTreeMap<&'static str, u64> {
    let p = path.to_string_lossy();
    let out = Command::new("tshark")
        // Wireshark's defaults, whatever preferences the user running the test keeps.
        .env(
            "WIRESHARK_CONFIG_DIR",
            std::env::temp_dir().join("flowbundle-no-wireshark-prefs"),
        )
        .args([
            "-n",
            "-r",
            &p,
            "-o",
            "ip.defragment:FALSE",
            "-o",
            "ipv6.defragment:FALSE",
            "-T",
            "fields",
            "-E",
            "separator=|",
            "-e",
            "frame.protocols",
            "-e",
            "ip.flags.mf",
            "-e",
            "ip.frag_offset",
            "-e",
            "ipv6.fraghdr.offset",
        ])
        .output();
    // tshark exits non-zero on a capture cut short, after printing what it read: use what it printed.
    let text = match out {
        Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
        Err(e) => panic!("tshark on {}: {e}", path.display()),
    };
    let mut c: BTreeMap<&'static str, u64> = TSHARK_COUNTERS.iter().map(|&k| (k, 0)).collect();
    let mut bump = |k: &'static str| *c.entry(k).or_default() += 1;
    for line in text.lines() {
        let f: Vec<&str> = line.split('|').collect();
        let protos: Vec<&str> = f[0].split(':').collect();
        let first = |i: usize| f.get(i).map_or("", |s| s.split(',').next().unwrap_or(""));
        bump("packets");
        let ip = protos.iter().position(|&t| t == "ip" || t == "ipv6");
        if protos[..ip.unwrap_or(protos.len())].contains(&"vlan") {
            bump("vlan_packets");
        }
        let Some(ip) = ip else { continue };
        bump("ip_packets");
        match protos[ip + 1..].iter().find(|t| !t.starts_with("ipv6.")) {
            Some(&"tcp") => bump("tcp_packets"),
            Some(&"udp") => bump("udp_packets"),
            _ => {}
        }
        let fragment = if protos[ip] == "ip" {
            first(1) == "1" || !matches!(first(2), "" | "0")
        } else {
            !first(3).is_empty()
        };
        if fragment {
            bump("fragmented_packets");
        }
    }
    c
}

/// The nDPI release the fixture was made with (Debian bookworm's libndpi-bin).
const NDPI_VERSION: &str = "4.2.";

/// ndpiReader's `Unique flows` (`None` when it printed no traffic statistics), and the nDPI version it reports.
fn ndpi_counts(path: &Path) -> (BTreeMap<&'static str, Option<u64>>, String) {
    let out = Command::new("ndpiReader").arg("-i").arg(path).output();
    let text = match out {
        Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
        Err(e) => panic!("ndpiReader on {}: {e}", path.display()),
    };
    let field = |name: &str| {
        text.lines().find_map(|l| {
            l.trim()
                .strip_prefix(name)
                .and_then(|v| v.split_whitespace().next())
                .map(str::to_string)
        })
    };
    let flows = field("Unique flows:").and_then(|v| v.parse().ok());
    let version = field("Using nDPI (")
        .map(|v| v.trim_end_matches(')').to_string())
        .unwrap_or_default();
    (BTreeMap::from([("unique_flows", flows)]), version)
}

fn ours(s: &TraceStats) -> BTreeMap<&'static str, u64> {
    let p = &s.protocols;
    BTreeMap::from([
        ("packets", s.packets),
        ("ip_packets", p.ipv4 + p.ipv6),
        ("tcp_packets", p.tcp),
        ("udp_packets", p.udp),
        ("vlan_packets", s.encapsulation.vlan_tagged),
        ("fragmented_packets", s.encapsulation.fragmented),
        ("unique_flows", s.connections.flows),
    ])
}

/// (file, counter) → (ours, theirs, reason).
type Fixture = BTreeMap<(String, String), (String, String, String)>;

fn load_fixture() -> Fixture {
    let text = std::fs::read_to_string(fixture_path())
        .unwrap_or_else(|e| panic!("{}: {e}", fixture_path().display()));
    let mut m = Fixture::new();
    for (n, line) in text.lines().enumerate() {
        if n == 0 || line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        assert!(
            f.len() == 5 && !f[4].trim().is_empty(),
            "fixture line {}: want file, counter, ours, theirs, reason: {line:?}",
            n + 1
        );
        let known = TSHARK_COUNTERS.contains(&f[1]) || NDPI_COUNTERS.contains(&f[1]);
        assert!(known, "fixture line {}: unknown counter {:?}", n + 1, f[1]);
        let dup = m.insert(
            (f[0].to_string(), f[1].to_string()),
            (f[2].to_string(), f[3].to_string(), f[4].to_string()),
        );
        assert!(dup.is_none(), "fixture line {}: listed twice", n + 1);
    }
    m
}

#[derive(Default)]
struct Found {
    tshark: Option<BTreeMap<&'static str, u64>>,
    ndpi: Option<(BTreeMap<&'static str, Option<u64>>, String)>,
}

#[test]
fn counts_agree_with_tshark_and_ndpi_reader() {
    const T: &str = "counts_agree_with_tshark_and_ndpi_reader";
    let Some(pcaps) = flowbundle_testsupport::data("ndpi/pcap") else {
        return;
    };
    // Each missing tool is reported (a failure under FLOWBUNDLE_REQUIRE_TOOLS=1); the other one is still compared.
    let has_tshark = flowbundle_testsupport::tool("tshark").is_some();
    let has_ndpi = flowbundle_testsupport::tool("ndpiReader").is_some();
    if !has_tshark && !has_ndpi {
        return;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&pcaps)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x == "pcap" || x == "pcapng" || x == "cap")
        })
        .collect();
    files.sort();
    assert!(files.len() >= 437, "{} captures", files.len());

    // One job per (file, tool), a few processes per core.
    let jobs: Vec<(usize, bool)> = (0..files.len())
        .flat_map(|i| {
            [(i, true), (i, false)]
                .into_iter()
                .filter(|&(_, ts)| if ts { has_tshark } else { has_ndpi })
        })
        .collect();
    let found: Vec<Mutex<Found>> = files.iter().map(|_| Mutex::default()).collect();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .saturating_mul(2)
        .clamp(2, 8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let j = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(i, is_tshark)) = jobs.get(j) else {
                        break;
                    };
                    if is_tshark {
                        let c = tshark_counts(&files[i]);
                        found[i].lock().unwrap().tshark = Some(c);
                    } else {
                        let c = ndpi_counts(&files[i]);
                        found[i].lock().unwrap().ndpi = Some(c);
                    }
                }
            });
        }
    });

    // The fixture lists what nDPI 4.2 does; another release counts flows its own way, so its counts are shown, not
    // enforced.
    let versions: BTreeSet<String> = found
        .iter()
        .filter_map(|f| f.lock().unwrap().ndpi.as_ref().map(|n| n.1.clone()))
        .filter(|v| !v.is_empty())
        .collect();
    let ndpi_enforced = has_ndpi && versions.iter().all(|v| v.starts_with(NDPI_VERSION));
    if has_ndpi && !ndpi_enforced {
        eprintln!(
            "{T}: ndpiReader reports nDPI {versions:?}, the fixture is for {NDPI_VERSION}x: flow counts shown, not enforced"
        );
    }

    let fixture = load_fixture();
    let cfg = StatsConfig::default();
    let mut used = BTreeSet::new();
    let mut problems = Vec::new();
    let mut compared = 0u64;
    let mut agreed = 0u64;
    for (f, found) in files.iter().zip(&found) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let s = stats_file(f, &cfg).unwrap_or_else(|e| panic!("{name}: {e}"));
        let us = ours(&s);
        let found = found.lock().unwrap();
        let mut theirs: Vec<(&'static str, Option<u64>)> = Vec::new();
        if let Some(t) = &found.tshark {
            theirs.extend(t.iter().map(|(&k, &v)| (k, Some(v))));
        }
        if let Some((n, _)) = &found.ndpi {
            theirs.extend(n.iter().map(|(&k, &v)| (k, v)));
        }
        for (counter, their) in theirs {
            compared += 1;
            let our = us[counter];
            if their == Some(our) {
                agreed += 1;
                continue;
            }
            let their_s = their.map_or("none".to_string(), |v| v.to_string());
            if NDPI_COUNTERS.contains(&counter) && !ndpi_enforced {
                eprintln!("{T}: {name}\t{counter}\t{our}\t{their_s}");
                continue;
            }
            let key = (name.clone(), counter.to_string());
            match fixture.get(&key) {
                Some((o, t, _)) if *o == our.to_string() && *t == their_s => {
                    used.insert(key);
                }
                Some((o, t, _)) => problems.push(format!(
                    "{name}\t{counter}\t{our}\t{their_s}\tlisted with ours {o}, theirs {t}"
                )),
                None => problems.push(format!("{name}\t{counter}\t{our}\t{their_s}\tnot listed")),
            }
        }
    }
    // Rows whose tool ran must still describe a real difference.
    for (key, (o, t, _)) in &fixture {
        let tool_ran = if TSHARK_COUNTERS.contains(&key.1.as_str()) {
            has_tshark
        } else {
            ndpi_enforced
        };
        if tool_ran && !used.contains(key) {
            problems.push(format!(
                "{}\t{}\t{o}\t{t}\tlisted but no longer different: remove it from the fixture",
                key.0, key.1
            ));
        }
    }
    eprintln!(
        "{T}: {} captures, {compared} counts compared, {agreed} equal, {} listed differences",
        files.len(),
        used.len()
    );
    assert!(
        problems.is_empty(),
        "differences from the reference tools not in {}:\n{}",
        fixture_path().display(),
        problems.join("\n")
    );
}
