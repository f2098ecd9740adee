//! Entry points shared by the property tests and the fuzz targets (`fuzz/fuzz_targets/rules_*.rs`), so a
//! failure the fuzzer finds reproduces as a unit test with the same call.

use crate::{
    AlertRecord, Buffer, Direction, FlowMatchState, HttpBuffer, PacketCtx, RuleSet, ScanStats,
    Transport, Vars,
};

/// Parses arbitrary bytes as a rule file; checks that every rule is accounted for exactly once.
pub fn parse_checked(text: &[u8]) -> Result<RuleSet, String> {
    let (rs, rep) = RuleSet::parse(text, &Vars::suricata_defaults()).map_err(|e| e.to_string())?;
    if rep.rules_read != rep.loaded + rep.skipped + rep.errors_total {
        return Err(format!("report does not add up: {rep:?}"));
    }
    if rs.len() != rep.loaded || rep.skip_reasons.values().sum::<usize>() != rep.skipped {
        return Err(format!("counts disagree: {} rules, {rep:?}", rs.len()));
    }
    Ok(rs)
}

/// Sids alerted on one stream direction fed as chunks ending at `cuts` (positions taken modulo the length).
pub fn stream_sids(rs: &RuleSet, data: &[u8], cuts: &[usize]) -> Vec<u32> {
    stream_run(rs, data, cuts).0
}

/// [`stream_sids`] and the scanner's counters.
pub fn stream_run(rs: &RuleSet, data: &[u8], cuts: &[usize]) -> (Vec<u32>, ScanStats) {
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let ctx = PacketCtx {
        dir: Direction::ToServer,
        ..PacketCtx::default()
    };
    let mut out: Vec<AlertRecord> = Vec::new();
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
    bounds.push(data.len());
    bounds.sort_unstable();
    let mut start = 0;
    for end in bounds {
        if let Some(chunk) = data.get(start..end) {
            rs.scan_stream(&mut sc, &mut flow, &ctx, chunk, start as u64, &mut out);
            start = end;
        }
    }
    rs.finish_flow(&mut sc, &mut flow, &mut out);
    let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
    s.sort_unstable();
    (s, *sc.stats())
}

/// Runs `data` through every entry point (stream in one piece and in pieces, datagram, each HTTP buffer) and
/// checks that stream alerts do not depend on the split. The check is void when a cap was hit in either run
/// (more than [`crate::scan::MAX_PENDING`] candidates waiting, counted in [`ScanStats::pending_overflow`]): the
/// split independence holds within the caps.
pub fn match_checked(rs: &RuleSet, data: &[u8], cuts: &[usize]) -> Result<(), String> {
    let (whole, s1) = stream_run(rs, data, &[]);
    let (split, s2) = stream_run(rs, data, cuts);
    let capped =
        s1.pending_overflow + s2.pending_overflow + s1.fired_overflow + s2.fired_overflow > 0;
    if whole != split && !capped {
        return Err(format!(
            "stream alerts depend on the split: whole {whole:?}, split {split:?} at {cuts:?}"
        ));
    }
    let mut sc = rs.scanner();
    let mut out: Vec<AlertRecord> = Vec::new();
    // Header fields from the data's first bytes, so the header keywords are exercised too.
    let b = |i: usize| data.get(i).copied().unwrap_or(0);
    let word = |i: usize| u32::from_be_bytes([b(i), b(i + 1), b(i + 2), b(i + 3)]);
    for transport in [Transport::Udp, Transport::Icmp, Transport::Tcp] {
        let header = crate::header::PacketHeader {
            ipv6: b(0) & 1 == 1,
            ip_proto: b(1),
            ttl: b(2),
            tos: b(3),
            ip_id: word(4),
            reserved_bit: b(0) & 2 != 0,
            dont_fragment: b(0) & 4 != 0,
            more_fragments: b(0) & 8 != 0,
            tcp: (transport == Transport::Tcp).then(|| crate::header::TcpHeader {
                flags: b(8),
                seq: word(9),
                ack: word(13),
                window: u16::from_be_bytes([b(17), b(18)]),
                mss: (b(0) & 16 != 0).then(|| u16::from_be_bytes([b(19), b(20)])),
                wscale: (b(41) & 32 != 0).then(|| b(42)),
            }),
            icmp: (transport == Transport::Icmp).then(|| crate::header::IcmpHeader {
                msg_type: b(8),
                code: b(9),
                rest: word(10),
            }),
            ip_opts: u16::from_be_bytes([b(21), b(22)]),
            vlan: [
                u16::from_be_bytes([b(23), b(24)]) & 0x0fff,
                u16::from_be_bytes([b(25), b(26)]) & 0x0fff,
                u16::from_be_bytes([b(27), b(28)]) & 0x0fff,
            ],
            vlan_layers: b(29),
            flow: crate::header::FlowCounters {
                pkts: [u32::from(b(30)), u32::from(b(31))],
                bytes: [u64::from(word(32)), u64::from(word(36))],
                age_secs: u32::from(b(40)),
                known: b(0) & 32 != 0,
            },
            no_ip: b(41) & 1 != 0,
            csum: crate::header::Checksums {
                ipv4: (b(41) & 2 != 0).then_some(b(41) & 4 != 0),
                l4: (b(41) & 8 != 0).then_some(b(41) & 16 != 0),
            },
            ..Default::default()
        };
        // The header buffers' bytes from the data too: its first half as the IP header, the rest as the transport
        // segment (cut as the transport's header is).
        let (ip, segment) = data.split_at(data.len() / 2);
        let proto = match transport {
            Transport::Tcp => 6,
            Transport::Udp => 17,
            _ if b(0) & 1 == 1 => 58,
            _ => 1,
        };
        let ctx = PacketCtx {
            transport,
            header: Some(header),
            raw: crate::header::RawHeaders::new(ip, segment, proto),
            // The session's sizes for `stream_size`, from the data too.
            stream_size: (transport == Transport::Tcp).then(|| crate::StreamSizes {
                client: word(19),
                server: word(23),
            }),
            ..PacketCtx::default()
        };
        rs.scan_packet(
            &mut sc,
            &mut FlowMatchState::default(),
            &ctx,
            data,
            &mut out,
        );
    }
    let mut flow = FlowMatchState::default();
    for kind in [
        HttpBuffer::RequestLine,
        HttpBuffer::RequestHead,
        HttpBuffer::Method,
        HttpBuffer::Uri,
        HttpBuffer::Host,
        HttpBuffer::UserAgent,
        HttpBuffer::RequestHeaders,
        HttpBuffer::RequestBody,
        HttpBuffer::ResponseLine,
        HttpBuffer::ResponseHead,
        HttpBuffer::StatusCode,
        HttpBuffer::ResponseHeaders,
        HttpBuffer::ResponseBody,
    ] {
        let dir = if kind.is_request() {
            Direction::ToServer
        } else {
            Direction::ToClient
        };
        let ctx = PacketCtx {
            dir,
            app_proto: Some("http"),
            ..PacketCtx::default()
        };
        rs.scan_http(&mut sc, &mut flow, &ctx, 0, kind, data, &mut out);
    }
    for b in Buffer::ALL
        .into_iter()
        .filter(|b| b.is_app() && !b.is_http())
    {
        let ctx = PacketCtx {
            dir: if b.is_response() {
                Direction::ToClient
            } else {
                Direction::ToServer
            },
            app_proto: b.app_proto(),
            ..PacketCtx::default()
        };
        rs.scan_app(&mut sc, &mut flow, &ctx, 0, b, data, &mut out);
    }
    Ok(())
}

/// The prefilter on arbitrary patterns and data fed as chunks ending at `cuts`: the vector gate (where the CPU has
/// one) and the scalar gate must both report exactly the occurrences a brute-force search finds. Returns the
/// number of occurrences.
pub fn prefilter_checked(
    patterns: &[(Vec<u8>, bool)],
    data: &[u8],
    cuts: &[usize],
) -> Result<usize, String> {
    use crate::prefilter::{MAX_PATTERN, PatternSet, ScanState};
    let vector = PatternSet::new(patterns);
    let mut scalar = vector.clone();
    scalar.set_vector_gate(false);
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
    bounds.push(data.len());
    bounds.sort_unstable();
    let run = |ps: &PatternSet| {
        let mut st = ScanState::default();
        let mut out = Vec::new();
        let mut start = 0;
        for &end in &bounds {
            if let (Some(tail), Some(chunk)) = (data.get(..start), data.get(start..end)) {
                ps.scan(&mut st, tail, chunk, |p, e| out.push((p, start + e)));
                start = end;
            }
        }
        out.sort_unstable();
        out
    };
    let mut want = Vec::new();
    for (i, (p, nocase)) in patterns.iter().enumerate() {
        // The prefilter keys a longer pattern on its last MAX_PATTERN bytes.
        let p = p.get(p.len().saturating_sub(MAX_PATTERN)..).unwrap_or(&[]);
        if p.is_empty() {
            continue;
        }
        for end in p.len()..=data.len() {
            let Some(w) = data.get(end - p.len()..end) else {
                continue;
            };
            if if *nocase {
                w.eq_ignore_ascii_case(p)
            } else {
                w == p
            } {
                want.push((i as u32, end));
            }
        }
    }
    want.sort_unstable();
    let got = run(&vector);
    if got != want {
        return Err(format!(
            "vector gate: {} occurrences, brute force {}",
            got.len(),
            want.len()
        ));
    }
    if run(&scalar) != want {
        return Err("scalar gate differs from brute force".into());
    }
    Ok(want.len())
}
