//! Real captures from `../shared/data`: packet counts against capinfos, timestamps against tshark to the
//! nanosecond, streaming against preloaded on every file, and the 830 malformed tcpdump captures (plain and
//! gzipped) through both readers. Skips with a message when the data or the tools are absent.

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{CAPTURE_EXTS, files_with_ext};
use flowbundle_ingest::testing::read_both;
use flowbundle_ingest::*;
use flowbundle_testsupport::{data, tool};

/// The captures whose packet count must match: every capture in `reassembly/` and `ndpi/pcap/`.
fn reference_captures(data: &Path) -> Vec<PathBuf> {
    let mut v = files_with_ext(&data.join("reassembly"), CAPTURE_EXTS);
    v.extend(files_with_ext(
        &data.join("reassembly/file_heuristics"),
        CAPTURE_EXTS,
    ));
    v.extend(files_with_ext(&data.join("ndpi/pcap"), CAPTURE_EXTS));
    v
}

/// What capinfos says about many files in one run: path → packet count, and the files it reports as "cut short in
/// the middle of a packet". Files capinfos cannot read are absent from the counts.
fn capinfos_counts(files: &[PathBuf]) -> (HashMap<PathBuf, u64>, Vec<PathBuf>) {
    let mut counts = HashMap::new();
    let mut cut = Vec::new();
    for chunk in files.chunks(200) {
        let out = Command::new("capinfos")
            .args(["-c", "-T", "-r"])
            .args(chunk)
            .output()
            .expect("run capinfos");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((path, n)) = line.rsplit_once('\t')
                && let Ok(n) = n.trim().parse()
            {
                counts.insert(PathBuf::from(path.trim()), n);
            }
        }
        for line in String::from_utf8_lossy(&out.stderr).lines() {
            if let Some(rest) = line.split_once("The file \"").map(|(_, r)| r)
                && let Some((path, why)) = rest.split_once('"')
                && why.contains("cut short in the middle of a packet")
            {
                cut.push(PathBuf::from(path));
            }
        }
    }
    (counts, cut)
}

fn read_all(path: &Path) -> Result<(u64, ReadStats), Error> {
    let mut r = CaptureReader::open(path)?;
    while r.next_packet()?.is_some() {}
    Ok((r.stats().packets, *r.stats()))
}

#[test]
fn reference_captures_read_completely_with_capinfos_counts() {
    let Some(data) = data("") else {
        return;
    };
    let files = reference_captures(&data);
    assert!(
        files.len() > 400,
        "expected the nDPI and PcapPlusPlus captures"
    );
    // Without capinfos (reported missing, a failure under FLOWBUNDLE_REQUIRE_TOOLS=1) every capture is still read.
    let have_capinfos = tool("capinfos").is_some();
    let (counts, cut) = if have_capinfos {
        capinfos_counts(&files)
    } else {
        (HashMap::new(), Vec::new())
    };
    let mut failures = Vec::new();
    let (mut packets, mut truncated) = (0, 0);
    for f in &files {
        match read_all(f) {
            Ok((n, stats)) => {
                packets += n;
                truncated += stats.truncated_records;
                if have_capinfos && (stats.truncated_records == 1) != cut.contains(f) {
                    failures.push(format!(
                        "{}: truncated final records: ours {}, capinfos says cut short: {}",
                        f.display(),
                        stats.truncated_records,
                        cut.contains(f)
                    ));
                }
                if let Some(&want) = counts.get(f)
                    && want != n
                {
                    failures.push(format!(
                        "{}: {n} packets, capinfos says {want}",
                        f.display()
                    ));
                }
                if have_capinfos && !counts.contains_key(f) {
                    failures.push(format!(
                        "{}: we read {n} packets, capinfos could not",
                        f.display()
                    ));
                }
            }
            Err(e) => failures.push(format!("{}: {e}", f.display())),
        }
    }
    eprintln!(
        "{} reference captures, {packets} packets, {truncated} cut short in a packet",
        files.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_named_special_captures() {
    let Some(data) = data("") else {
        return;
    };
    let r = data.join("reassembly");
    let expect: &[(&str, LinkType, ByteOrder, TsResolution)] = &[
        (
            "microsecs.pcap",
            LinkType::ETHERNET,
            ByteOrder::Little,
            TsResolution::MICRO,
        ),
        (
            // Despite its name, a Linux netlink capture.
            "microsecs_big_endian.pcap",
            LinkType(253),
            ByteOrder::Big,
            TsResolution::MICRO,
        ),
        (
            "nanosecs.pcap",
            LinkType::ETHERNET,
            ByteOrder::Little,
            TsResolution::NANO,
        ),
        (
            "nanosecs_big_endian.pcap",
            LinkType::ETHERNET,
            ByteOrder::Big,
            TsResolution::NANO,
        ),
        (
            "linktype_ipv4.pcap",
            LinkType::IPV4,
            ByteOrder::Little,
            TsResolution::MICRO,
        ),
        (
            "linktype_ipv6.pcap",
            LinkType::IPV6,
            ByteOrder::Little,
            TsResolution::MICRO,
        ),
        (
            "null_loopback.pcap",
            LinkType::NULL,
            ByteOrder::Little,
            TsResolution::MICRO,
        ),
        (
            "sll.pcap",
            LinkType::LINUX_SLL,
            ByteOrder::Little,
            TsResolution::MICRO,
        ),
        (
            "sll2.pcap",
            LinkType::LINUX_SLL2,
            ByteOrder::Little,
            TsResolution::MICRO,
        ),
        (
            "raw_ip.pcap",
            LinkType::RAW,
            ByteOrder::Little,
            TsResolution::MICRO,
        ),
    ];
    for &(name, link, order, res) in expect {
        let path = r.join(name);
        let mut reader = CaptureReader::open(&path).unwrap();
        assert_eq!(reader.format().byte_order, order, "{name}");
        assert_eq!(reader.interfaces()[0].resolution, res, "{name}");
        let p = reader.next_packet().unwrap().unwrap();
        assert_eq!(p.link_type, link, "{name}");
    }
    let t = Trace::load(r.join("many_interfaces-1.pcapng")).unwrap();
    assert_eq!(t.interfaces().len(), 11);
    assert_eq!(t.len(), 64);
    assert!(t.stats().skipped.interface_statistics > 0);
    let mut used: Vec<u32> = t.iter().map(|p| p.interface).collect();
    used.sort();
    used.dedup();
    assert!(used.len() > 1, "packets from several interfaces: {used:?}");

    let t = Trace::load(r.join("pcapng-example.pcapng")).unwrap();
    let links: Vec<LinkType> = t.interfaces().iter().map(|i| i.link_type).collect();
    assert_eq!(links, [LinkType::ETHERNET, LinkType::LINUX_SLL]);
    assert_eq!(t.interfaces()[0].resolution, TsResolution::NANO);
    assert_eq!(t.len(), 159);

    let t = Trace::load(r.join("too_many_interfaces.pcapng")).unwrap();
    assert_eq!(t.interfaces().len(), 95);
    assert_eq!(t.len(), 1);

    // Not a pcap: a clear, typed error naming the bytes.
    match CaptureReader::open(r.join("solaris.snoop")) {
        Err(e @ Error::UnknownMagic { .. }) => assert!(e.to_string().contains("73 6e 6f 6f 70")),
        other => panic!("{other:?}"),
    }
}

/// tshark's `frame.time_epoch` ("1234567890.123456789") in nanoseconds, exactly; values past `u64` nanoseconds
/// (year 2554, e.g. a negative time written as an unsigned tick count) saturate as our timestamps do.
fn epoch_ns(s: &str) -> u64 {
    let (sec, frac) = s.trim().split_once('.').unwrap_or((s.trim(), "0"));
    let mut frac = frac.to_string();
    frac.truncate(9);
    while frac.len() < 9 {
        frac.push('0');
    }
    let ns = sec.parse::<u128>().unwrap() * 1_000_000_000 + frac.parse::<u128>().unwrap();
    u64::try_from(ns).unwrap_or(u64::MAX)
}

#[test]
fn first_and_last_timestamps_match_tshark_to_the_nanosecond() {
    let Some(data) = data("") else {
        return;
    };
    if tool("tshark").is_none() {
        return;
    }
    let mut files: Vec<PathBuf> = [
        "microsecs.pcap",
        "microsecs_big_endian.pcap",
        "nanosecs.pcap",
        "nanosecs_big_endian.pcap",
        "many_interfaces-1.pcapng",
        "pcapng-example.pcapng",
        "null_loopback.pcap",
        "example2.pcap",
    ]
    .iter()
    .map(|n| data.join("reassembly").join(n))
    .collect();
    // A few pcapng files from nDPI (different writers, interface options).
    let ng: Vec<PathBuf> = files_with_ext(&data.join("ndpi/pcap"), &["pcapng"]);
    files.extend(ng.iter().step_by(20).cloned());
    for f in &files {
        let out = Command::new("tshark")
            .arg("-r")
            .arg(f)
            .args(["-T", "fields", "-e", "frame.time_epoch"])
            .output()
            .expect("run tshark");
        let text = String::from_utf8_lossy(&out.stdout);
        let theirs: Vec<u64> = text
            .lines()
            .filter(|l| !l.is_empty())
            .map(epoch_ns)
            .collect();
        let t = Trace::load(f).unwrap();
        assert_eq!(theirs.len(), t.len(), "{}", f.display());
        if t.is_empty() {
            continue;
        }
        assert_eq!(t.get(0).ts_ns, theirs[0], "first packet of {}", f.display());
        assert_eq!(
            t.get(t.len() - 1).ts_ns,
            theirs[theirs.len() - 1],
            "last packet of {}",
            f.display()
        );
        // And every packet in between, since we have them.
        for (i, (ours, want)) in t.iter().map(|p| p.ts_ns).zip(&theirs).enumerate() {
            assert_eq!(ours, *want, "packet {} of {}", i + 1, f.display());
        }
    }
}

#[test]
fn streaming_and_preloaded_agree_on_every_reference_capture() {
    let Some(data) = data("") else {
        return;
    };
    for f in reference_captures(&data) {
        let bytes = std::fs::read(&f).unwrap();
        let a = read_both(&bytes).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        // And through the file API.
        let t = Trace::load(&f).unwrap();
        let mut r = CaptureReader::open(&f).unwrap();
        let mut i = 0;
        while let Some(p) = r.next_packet().unwrap() {
            assert_eq!(p, t.get(i), "{} packet {i}", f.display());
            i += 1;
        }
        assert_eq!(i as u64, a.packets);
        assert_eq!(t.bytes(), r.stats().bytes);
    }
}

fn gzip_into(dir: &Path, src: &Path) -> PathBuf {
    let name = src.file_name().unwrap().to_string_lossy().to_string() + ".gz";
    let dst = dir.join(name);
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&dst).unwrap(),
        flate2::Compression::fast(),
    );
    gz.write_all(&std::fs::read(src).unwrap()).unwrap();
    gz.finish().unwrap();
    dst
}

#[test]
fn malformed_captures_plain_and_gzipped_never_panic_and_readers_agree() {
    let Some(data) = data("") else {
        return;
    };
    let files = files_with_ext(&data.join("malformed"), &["pcap", "pcapng"]);
    assert_eq!(files.len(), 830, "the tcpdump corpus has 830 captures");
    let dir = tempfile::tempdir().unwrap();
    let (mut clean, mut errors, mut truncated, mut packets) = (0, 0, 0, 0u64);
    let mut kinds: HashMap<String, u32> = HashMap::new();
    for f in &files {
        let plain = std::fs::read(f).unwrap();
        let a = read_both(&plain).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let gz_path = gzip_into(dir.path(), f);
        let gz = std::fs::read(&gz_path).unwrap();
        let b = read_both(&gz).unwrap_or_else(|e| panic!("{} gzipped: {e}", f.display()));
        assert_eq!(
            (a.packets, &a.error),
            (b.packets, &b.error),
            "{}: gzip changes the outcome",
            f.display()
        );

        // The file APIs give the same outcome (errors are typed `Error`s with a message).
        let streamed = read_all(f);
        let gz_streamed = read_all(&gz_path);
        match (&streamed, &gz_streamed) {
            (Ok((n, s)), Ok((m, _))) => {
                assert_eq!(n, m);
                clean += 1;
                truncated += s.truncated_records;
                packets += n;
            }
            (Err(e), Err(g)) => {
                assert_eq!(e.to_string(), g.to_string(), "{}", f.display());
                assert!(
                    !matches!(e, Error::Io(_) | Error::File { .. }),
                    "{}: {e}",
                    f.display()
                );
                errors += 1;
                let kind = format!("{e:?}");
                let kind = kind.split([' ', '(', '{']).next().unwrap_or("").to_string();
                *kinds.entry(kind).or_default() += 1;
            }
            (a, b) => panic!("{}: plain {a:?}, gzipped {b:?}", f.display()),
        }
        match Trace::load_partial(f) {
            Ok((t, e)) => {
                assert_eq!(e.is_some(), streamed.is_err(), "{}", f.display());
                assert_eq!(t.len() as u64, a.packets);
            }
            Err(e) => assert!(streamed.is_err(), "{}: {e}", f.display()),
        }
    }
    eprintln!(
        "malformed corpus: {clean} clean ({truncated} with a truncated final record, {packets} packets), \
         {errors} ended in an error: {kinds:?}"
    );
}

#[test]
fn malformed_counts_agree_with_capinfos_where_both_read_cleanly() {
    let Some(data) = data("") else {
        return;
    };
    if tool("capinfos").is_none() {
        return;
    }
    let files = files_with_ext(&data.join("malformed"), &["pcap", "pcapng"]);
    let (counts, _) = capinfos_counts(&files);
    let mut compared = 0;
    let mut differ = Vec::new();
    for f in &files {
        let Ok((n, s)) = read_all(f) else { continue };
        if s.truncated_records != 0 {
            continue;
        }
        if let Some(&want) = counts.get(f) {
            compared += 1;
            if want != n {
                differ.push(format!("{}: {n} vs capinfos {want}", f.display()));
            }
        }
    }
    eprintln!("malformed corpus: {compared} files compared with capinfos");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
