//! Key-only decoding never disagrees with decoding: wherever [`plain_fid`] answers, the full decode of the same bytes
//! is no fragment (the defragmenter passes it through) and files the packet under the same bundle
//! ([`bundle_of`]). On every packet of the nDPI captures, the reassembly captures and the malformed corpus, under
//! each set of decoder options the engine can run with, and on random mutations of well-formed packets.

use flowbundle_decode::keyonly::{plain_bundle, plain_fid};
use flowbundle_decode::{
    DecodeOptions, DefragConfig, DefragOutcome, Defragmenter, bundle_of, decode_bytes,
};
use flowbundle_ingest::{LinkType, Trace};
use proptest::prelude::*;

/// The option sets: the decoder's default, the engine's (tunnels decapsulated), and the engine's with every
/// option that changes where a packet is filed or whether it decodes.
fn option_sets() -> [DecodeOptions; 3] {
    let plain = DecodeOptions::default();
    let engine = DecodeOptions {
        decap_tunnels: true,
        ..plain
    };
    let strict = DecodeOptions {
        decap_tunnels: true,
        verify_ipv4_checksum: true,
        icmp_errors_in_quoted_flow: true,
        tunnel_depth_in_key: false,
        max_depth: 1,
        ..plain
    };
    [plain, engine, strict]
}

/// Checks one packet under `opts`; returns whether key-only decoding answered.
fn check(link: LinkType, data: &[u8], opts: &DecodeOptions, what: &dyn Fn() -> String) -> bool {
    let bundle = plain_bundle(link, data, opts);
    let Some(fid) = plain_fid(link, data, opts) else {
        assert_eq!(bundle, None, "{}: a bundle without a FID", what());
        return false;
    };
    assert_eq!(
        bundle,
        Some(fid.crc16()),
        "{}: the key-only bundle is not the FID's CRC-16",
        what()
    );
    let d = decode_bytes(link, data, opts);
    assert!(
        d.ip.is_some_and(|ip| !ip.is_fragment()),
        "{}: key-only decoding answered for a fragment or a packet without IP ({:?})",
        what(),
        d.outcome
    );
    assert_eq!(
        bundle_of(&d),
        fid.crc16(),
        "{}: key-only decoding and decoding disagree on the bundle",
        what()
    );
    let mut df = Defragmenter::new(DefragConfig::default());
    assert!(
        matches!(df.push(&d, 0), DefragOutcome::NotFragment),
        "{}",
        what()
    );
    true
}

fn captures_under(rel: &str) -> Vec<std::path::PathBuf> {
    let Some(dir) = flowbundle_testsupport::data(rel) else {
        return Vec::new();
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x == "pcap" || x == "pcapng" || x == "cap")
        })
        .collect();
    files.sort();
    files
}

#[test]
fn key_only_decoding_agrees_with_decoding_on_real_and_malformed_captures() {
    let sets = option_sets();
    let (mut packets, mut answered) = (0u64, [0u64; 3]);
    let mut files = 0;
    for rel in ["ndpi/pcap", "reassembly", "malformed"] {
        for path in captures_under(rel) {
            // Unreadable captures are ingest's to report.
            let Ok((trace, _)) = Trace::load_partial(&path) else {
                continue;
            };
            files += 1;
            for (i, rec) in trace.iter().enumerate() {
                packets += 1;
                for (k, opts) in sets.iter().enumerate() {
                    let what = || format!("{} packet {i} options {k}", path.display());
                    answered[k] += u64::from(check(rec.link_type, rec.data, opts, &what));
                }
            }
        }
    }
    eprintln!("{files} captures, {packets} packets; key-only answered {answered:?}");
    if packets == 0 {
        return;
    }
    assert!(files > 1000, "{files} captures");
    // Most real packets are plain TCP or UDP over Ethernet: the fast path must cover them, or it saves nothing.
    assert!(
        answered[1] * 10 > packets * 8,
        "key-only decoding answered only {} of {packets} packets",
        answered[1]
    );
}

/// A well-formed Ethernet frame: `vlans` tags, IPv4 or IPv6, then `proto` with a 20-byte header from port `sport`
/// to `dport`.
fn template(v6: bool, vlans: usize, proto: u8, sport: u16, dport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    for _ in 0..vlans {
        f.extend_from_slice(&[0x81, 0x00, 0x00, 0x07]);
    }
    if v6 {
        f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, 20, proto, 64]);
        f.extend((0..32).map(|i| i as u8 ^ 0x5a));
    } else {
        f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, proto, 0, 0]);
        f.extend_from_slice(&[192, 168, 1, 7, 10, 0, 0, 1]);
    }
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 20, 0, 0, 0, 0, 0, 0, 0x50, 0x10, 0, 0, 0, 0, 0, 0]);
    f
}

/// Ports of the UDP tunnels the decoder enters (VXLAN, GTP-U, Geneve, CAPWAP data) and two others.
fn port() -> impl Strategy<Value = u16> {
    prop::sample::select(vec![4789u16, 2152, 6081, 5247, 53, 443])
}

const LINKS: [LinkType; 8] = [
    LinkType::ETHERNET,
    LinkType::LINUX_SLL,
    LinkType::RAW,
    LinkType::RAW_BSD12,
    LinkType::RAW_BSD14,
    LinkType::IPV4,
    LinkType::IPV6,
    LinkType::NULL,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Any bytes under any link type.
    #[test]
    fn key_only_decoding_agrees_on_random_bytes(
        link in 0..LINKS.len(),
        data in prop::collection::vec(any::<u8>(), 0..96),
        set in 0..3usize,
    ) {
        let opts = option_sets()[set];
        check(LINKS[link], &data, &opts, &|| format!("{data:02x?}"));
    }

    /// Well-formed frames with a few bytes changed and maybe cut: the boundaries of every check (versions,
    /// lengths, fragment fields, protocols, ports, VLAN tags).
    #[test]
    fn key_only_decoding_agrees_on_mutated_packets(
        v6 in any::<bool>(),
        vlans in 0..4usize,
        proto in prop::sample::select(vec![1u8, 4, 6, 17, 41, 44, 47, 58, 59, 132]),
        sport in port(),
        dport in port(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in any::<prop::sample::Index>(),
        cut_it in any::<bool>(),
        link in 0..3usize,
        set in 0..3usize,
    ) {
        let opts = option_sets()[set];
        let mut f = template(v6, vlans, proto, sport, dport);
        for (at, b) in &edits {
            let i = at.index(f.len());
            f[i] = *b;
        }
        if cut_it {
            f.truncate(cut.index(f.len() + 1));
        }
        // The same bytes as an Ethernet frame, as raw IP (without the Ethernet header) and as Linux cooked.
        let (link, bytes) = match link {
            0 => (LinkType::ETHERNET, f.clone()),
            1 => (LinkType::RAW, f.get(14 + 4 * vlans..).unwrap_or(&[]).to_vec()),
            _ => {
                let mut s = vec![0u8; 14];
                s.extend_from_slice(f.get(12..).unwrap_or(&[]));
                (LinkType::LINUX_SLL, s)
            }
        };
        check(link, &bytes, &opts, &|| format!("{bytes:02x?}"));
    }
}
