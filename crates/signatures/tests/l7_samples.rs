//! Every pattern against the L7-filter set's own samples (`l7-protocols/testing/data`).
//!
//! The samples are raw application data: `PROTO-N` (or `PROTO-L-N` for session L) holds the first N packets of a
//! session, both directions concatenated, NUL bytes included (testing/README: "to simulate what l7-filter sees,
//! the first file has only the first packet, the second has the first two packets, and so on"; the
//! `aresdownload-*` files are whole sessions of unknown shape). So file N is exactly the buffer l7-filter
//! matches after packet N, and a pattern "matches its session" when it matches one of the session's files as a
//! buffer; the first such N is the packet at which l7-filter would have seen it match. Some files end in a
//! newline the capture tool added, so consecutive files are not always prefixes of each other; where they are,
//! the packets are recovered as the differences and fed one by one to check the incremental engine on real data.

use flowbundle_signatures::reference::Reference;
use flowbundle_signatures::{Options, SigId, SignatureSet, Verdict};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Session name → the pattern it is a sample of (`None`: a sample of something the set has no pattern for).
const EXPECTED: &[(&str, Option<&str>)] = &[
    ("aim", Some("aim")),
    ("aresdownload-a", Some("ares")),
    ("aresdownload-b", Some("ares")),
    ("aresdownload-c", Some("ares")),
    ("bittorrent-a", Some("bittorrent")),
    ("bittorrent-b", Some("bittorrent")),
    ("chikka-a", Some("chikka")),
    ("chikka-b", Some("chikka")),
    // Windows Messenger service spam over DCE/RPC: the set has no pattern for it; kept to watch overmatches.
    ("dce-rpc-spam-a", None),
    ("dce-rpc-spam-b", None),
    ("dns", Some("dns")),
    ("edonkey-tcp-a", Some("edonkey")),
    ("edonkey-tcp-b", Some("edonkey")),
    ("edonkey-udp-a", Some("edonkey")),
    ("edonkey-udp-b", Some("edonkey")),
    ("ftp", Some("ftp")),
    ("gnutella", Some("gnutella")),
    ("gnutella-connect", Some("gnutella")),
    ("gnutella-udp-a", Some("gnutella")),
    ("gnutella-udp-b", Some("gnutella")),
    ("gnutella-udp-c", Some("gnutella")),
    ("http-digg-304", Some("http")),
    ("http-wunderground", Some("http")),
    ("imap", Some("imap")),
    ("ipp", Some("ipp")),
    ("jabber", Some("jabber")),
    ("skypeout-a", Some("skypeout")),
    ("skypeout-b", Some("skypeout")),
    ("skypeout-c", Some("skypeout")),
    ("ssdp", Some("ssdp")),
    ("ssh", Some("ssh")),
    ("stun", Some("stun")),
    ("validcertssl", Some("validcertssl")),
    ("winmx", Some("winmx")),
    ("x11", Some("x11")),
    ("yahoo", Some("yahoo")),
];

/// Sessions whose own pattern does not match them, and why. The test fails if one of these starts matching
/// (then the entry should go).
const KNOWN_MISSES: &[(&str, &str)] = &[
    (
        "aresdownload-a",
        "ares.pat: 'undermatch'; \"catches only client-server connect messages ... doesn't catch the actual file \
         transfers\", and these are file transfers (testing/README: 'not sure what they are exactly')",
    ),
    ("aresdownload-b", "as aresdownload-a"),
    ("aresdownload-c", "as aresdownload-a"),
    (
        "gnutella-udp-c",
        "a Gnutella2 UDP packet ('L\\x0bPI...IDENT') that none of gnutella.pat's branches covers (UDP branches \
         need 'GND' or '...lime'); x11.pat ('This pattern is too general') takes it",
    ),
    (
        "stun",
        "stun.pat is 'untested as far as I know' and matches only a 20-byte Binding/Shared Secret Request \
         (^[\\x01\\x02]...$); the sample's first packet has no message type (it starts with the transaction id) \
         and the second is a Binding Response (\\x01\\x01 with attributes)",
    ),
    (
        "winmx",
        "winmx.pat lives in from-layer7-patterns/ (removed from the set 2005-01-20: 'just use gnutella') and is \
         'unconfirmed'; the sample is opaque binary with no '+...p...get'",
    ),
];

/// Sessions the default set (protocols/ only) classifies as something else, and why: in each, a pattern its
/// own authors mark `overmatch` matches the first packet, before the right pattern's evidence arrives, and
/// l7-filter decides at the first packet that matches anything.
const KNOWN_MISCLASSIFIED: &[(&str, &str, &str)] = &[
    (
        "http-wunderground",
        "skypeout",
        "skypeout.pat (overmatch) matches the request; http.pat deliberately waits for the response",
    ),
    (
        "skypeout-a",
        "ntp",
        "ntp.pat (overmatch) matches the first 6-byte packet; skypeout.pat needs two",
    ),
    (
        "validcertssl",
        "rtp",
        "rtp.pat (overmatch) matches the ClientHello; validcertssl.pat needs the certificate in packet 2",
    ),
];

/// The L7-filter set with its protocol samples (`testing/data`), or `None` when the shared data lacks them.
fn l7_set_dir() -> Option<PathBuf> {
    flowbundle_testsupport::data("l7-protocols/testing/data")?;
    flowbundle_testsupport::data("l7-protocols")
}

/// Every pattern of the set: all directories, the legacy one included (winmx's only pattern is there).
fn everything() -> &'static SignatureSet {
    static SET: OnceLock<SignatureSet> = OnceLock::new();
    SET.get_or_init(|| {
        let dir = l7_set_dir().expect("checked by the caller");
        let opts = Options {
            legacy: true,
            ..Options::all()
        };
        let (set, report) = SignatureSet::load_dir(&dir, &opts).expect("load the set");
        eprintln!("{report}");
        set
    })
}

/// Session name (file name without its packet count) → files in packet-count order.
fn sessions(dir: &Path) -> BTreeMap<String, Vec<(usize, Vec<u8>)>> {
    let mut out: BTreeMap<String, Vec<(usize, Vec<u8>)>> = BTreeMap::new();
    for entry in std::fs::read_dir(dir.join("testing/data")).expect("list testing/data") {
        let path = entry.expect("dir entry").path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (session, n) = match name.rsplit_once('-').map(|(s, n)| (s, n.parse::<usize>())) {
            Some((s, Ok(n))) => (s.to_string(), n),
            _ => (name.clone(), 1),
        };
        out.entry(session)
            .or_default()
            .push((n, std::fs::read(&path).expect("read sample")));
    }
    for files in out.values_mut() {
        files.sort_by_key(|f| f.0);
    }
    out
}

/// What l7-filter concludes from the buffers after each packet: the first buffer any pattern matches, and the
/// best signature among those that match it.
fn l7_verdict(set: &SignatureSet, files: &[(usize, Vec<u8>)]) -> (Option<usize>, Option<SigId>) {
    for (n, data) in files {
        if let Some(&best) = set.matching(data).first() {
            return (Some(*n), Some(best));
        }
    }
    (None, None)
}

#[test]
fn every_pattern_matches_its_own_samples() {
    let Some(dir) = l7_set_dir() else { return };
    let set = everything();
    let sessions = sessions(&dir);
    let expected: BTreeMap<&str, Option<&str>> = EXPECTED.iter().copied().collect();
    for name in sessions.keys() {
        assert!(
            expected.contains_key(name.as_str()),
            "sample session {name} has no entry in EXPECTED"
        );
    }

    let mut failures = Vec::new();
    let mut overmatch: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    println!(
        "{:<18} {:>5} {:<13} {:>13}  {:<14} also matching",
        "session", "files", "pattern", "first match", "l7 verdict"
    );
    for (session, files) in &sessions {
        let own = expected[session.as_str()];
        let own_id = own.map(|name| {
            set.find(name)
                .unwrap_or_else(|| panic!("pattern {name} not loaded"))
        });
        let first = own_id.and_then(|id| {
            files
                .iter()
                .find(|(_, d)| set.matching(d).contains(&id))
                .map(|f| f.0)
        });
        let mut others: Vec<&str> = Vec::new();
        for (_, data) in files {
            for id in set.matching(data) {
                if Some(id) != own_id && !others.contains(&set.name(id)) {
                    others.push(set.name(id));
                }
            }
        }
        for o in &others {
            overmatch.entry(o).or_default().push(session);
        }
        let (_, verdict) = l7_verdict(set, files);
        println!(
            "{session:<18} {:>5} {:<13} {:>13}  {:<14} {}",
            files.len(),
            own.unwrap_or("-"),
            first.map_or("never".to_string(), |n| format!("packet {n}")),
            verdict.map_or("-", |id| set.name(id)),
            others.join(" ")
        );
        let known_miss = KNOWN_MISSES.iter().find(|(s, _)| s == session);
        match (own, first, known_miss) {
            (Some(_), Some(_), Some(_)) => failures.push(format!(
                "{session}: listed in KNOWN_MISSES but its pattern now matches"
            )),
            (Some(p), None, None) => {
                failures.push(format!("{session}: pattern {p} does not match any file"))
            }
            _ => {}
        }
    }
    println!("\nother patterns matching samples that are not theirs:");
    for (pattern, sessions) in &overmatch {
        println!("  {pattern:<14} {}", sessions.join(" "));
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn default_set_classifies_samples_with_l7_precedence() {
    // The protocols directory alone, l7-filter's default: which protocol does each session end up as, when the
    // precedence tiers (subset < plain < superset < overmatch) break ties inside a packet?
    let Some(dir) = l7_set_dir() else { return };
    let (set, report) = SignatureSet::load_dir(&dir, &Options::default()).expect("load");
    assert_eq!(set.len(), 113, "{report}");
    assert!(report.rejected.is_empty(), "{report}");
    assert_eq!(report.special, ["unknown", "unset"]);
    let mut wrong = Vec::new();
    let mut judged = 0;
    for (session, files) in sessions(&dir) {
        let own = EXPECTED
            .iter()
            .find(|(s, _)| *s == session)
            .and_then(|e| e.1);
        if own.is_none() || KNOWN_MISSES.iter().any(|(s, _)| *s == session) {
            continue;
        }
        let Some(own_id) = own.and_then(|name| set.find(name)) else {
            continue;
        };
        let (n, verdict) = l7_verdict(&set, &files);
        judged += 1;
        if verdict != Some(own_id) {
            let got = verdict.map_or("-", |id| set.name(id)).to_string();
            println!(
                "{session}: classified as {got} at packet {n:?}, its pattern is {}",
                set.name(own_id)
            );
            wrong.push((session, got));
        }
    }
    println!(
        "{}/{judged} sample sessions classified as their own protocol",
        judged - wrong.len()
    );
    let known: Vec<(String, String)> = KNOWN_MISCLASSIFIED
        .iter()
        .map(|(s, p, _)| (s.to_string(), p.to_string()))
        .collect();
    assert_eq!(wrong, known);
}

#[test]
fn incremental_feed_agrees_with_buffer_matching_on_real_sessions() {
    let Some(dir) = l7_set_dir() else { return };
    let set = everything();
    let reference = Reference::new(set).expect("reference");
    let mut checked = 0;
    for (session, files) in sessions(&dir) {
        // Recover packets where the files are prefixes of each other.
        let consistent = files.windows(2).all(|w| w[1].1.starts_with(&w[0].1));
        if !consistent || files.len() < 2 {
            continue;
        }
        let mut packets: Vec<&[u8]> = Vec::new();
        let mut prev = 0;
        for (_, data) in &files {
            packets.push(&data[prev..]);
            prev = data.len();
        }
        let mut state = set.new_state();
        let mut rstate = reference.new_conn();
        for (k, packet) in packets.iter().enumerate() {
            let engine = set.feed(&mut state, packet);
            let literal = reference.feed(&mut rstate, packet);
            assert!(
                Reference::agrees(engine, literal),
                "{session} packet {}: engine {engine:?}, reference {literal:?}",
                k + 1
            );
            // And with matching() over the file of the first k+1 packets, while undecided.
            if engine != Verdict::NoMatch && !files[k].1.is_empty() {
                let buffer_best = set.matching(&files[k].1).first().copied();
                if let Verdict::Matched(id) = engine {
                    let before = (0..k).all(|j| set.matching(&files[j].1).is_empty());
                    if before {
                        assert_eq!(Some(id), buffer_best, "{session} packet {}", k + 1);
                    }
                }
            }
        }
        checked += 1;
    }
    assert!(
        checked >= 15,
        "only {checked} sessions had consistent files"
    );
    println!("{checked} sessions fed packet by packet");
}
