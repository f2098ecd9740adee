//! Keywords on a flow's session and application state, through `flowbundle inspect`: `stream_size`, `tls.version`,
//! `ftpbounce`, `asn1`, `app-layer-event:http.invalid_transfer_encoding_value_in_request` and PCRE's `\g{N}`. Each
//! loads (no rule skipped, strict loading), fires on a capture where its condition holds and stays silent where a
//! neighbouring value does not hold. The shared captures are suricata-verify's; the last three keywords run on a
//! capture written here (a crafted TCP conversation).

use flowbundle_decode::wire;
use flowbundle_testsupport::data;
use std::path::Path;
use std::process::Command;

/// `inspect` with `rules` over `capture`, EVE to standard output: the signature ids that alerted, sorted, and what
/// it wrote to standard error (the rules' load report among it).
fn sids(capture: &Path, rules: &str) -> (Vec<u32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.rules");
    std::fs::write(&path, rules).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args(["inspect", "-o", "-", "--threads", "1", "--rules"])
        .arg(&path)
        .arg("--")
        .arg(capture)
        .output()
        .expect("running flowbundle");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let mut got: Vec<u32> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("\"event_type\":\"alert\""))
        .filter_map(|l| {
            let at = l.find("\"signature_id\":")? + "\"signature_id\":".len();
            l[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect();
    got.sort_unstable();
    got.dedup();
    (got, err)
}

/// Every rule of `rules` loads: the load report names no skip and no error.
fn assert_all_load(summary: &str, rules: &str) {
    let n = rules.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(
        summary.contains(&format!("{n} rules read: {n} loaded, 0 skipped, 0 errors")),
        "not every rule loaded: {summary}"
    );
}

#[test]
fn stream_size_tls_version_and_ftpbounce_fire_on_the_shared_captures() {
    let (Some(smb), Some(tls), Some(ftp)) = (
        data("suricata-verify/smb-eicar-file/input.pcap"),
        data("suricata-verify/ja4-tls-quic/input.pcap"),
        data("suricata-verify/ftp/ftp-bounce/test.pcap"),
    ) else {
        return;
    };
    // The client's `EICAR` packet is inspected after the server has used 1008 sequence numbers (SYN and 1007
    // bytes) and the client 954.
    let rules = "alert tcp any any -> any any (flow:to_server; stream_size:server,=,1008; content:\"EICAR\"; sid:1;)\n\
                 alert tcp any any -> any any (flow:to_server; stream_size:server,<,1008; content:\"EICAR\"; sid:2;)\n\
                 alert tcp any any -> any any (flow:to_server; stream_size:both,<=,1008; content:\"EICAR\"; sid:3;)\n";
    let (got, summary) = sids(&smb, rules);
    assert_all_load(&summary, rules);
    assert_eq!(got, vec![1, 3]);
    // A TLS 1.3 handshake: the client hello says 1.2, the server negotiates 1.3.
    let rules = "alert tls any any -> any any (flow:to_server; tls.version:1.2; sid:11;)\n\
                 alert tls any any -> any any (flow:to_client; tls.version:1.3; sid:12;)\n\
                 alert tls any any -> any any (flow:to_client; tls.version:1.2; sid:13;)\n";
    let (got, summary) = sids(&tls, rules);
    assert_all_load(&summary, rules);
    assert_eq!(got, vec![11, 12]);
    // Two FTP sessions: a PORT to the client itself, then one to another host.
    let rules = "alert tcp any any -> any any (msg:\"FTP bounce\"; ftpbounce; sid:21;)\n\
                 alert tcp any any -> any 21 (flow:to_server; content:\"PORT\"; nocase; ftpbounce; pcre:\"/^PORT/smi\"; sid:22;)\n";
    let (got, summary) = sids(&ftp, rules);
    assert_all_load(&summary, rules);
    assert_eq!(got, vec![21, 22]);
}

#[test]
fn asn1_http_transfer_encoding_event_and_pcre_g_reference_fire_on_a_written_capture() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("conv.pcap");
    conversations(&cap);
    let rules = "alert tcp any any -> any 9000 (content:\"NEG\"; asn1:bitstring_overflow, relative_offset 1; sid:31;)\n\
                 alert tcp any any -> any 9000 (content:\"NEG\"; asn1:oversize_length 4096, relative_offset 1; sid:32;)\n\
                 alert http any any -> any any (flow:established,to_server; app-layer-event:http.invalid_transfer_encoding_value_in_request; sid:33;)\n\
                 alert tcp any any -> any 9000 (content:\"ab\"; pcre:\"/(ab)\\g{1}!/\"; sid:34;)\n\
                 alert tcp any any -> any 9000 (content:\"ab\"; pcre:\"/(ab)\\g{1}\\g{1}/\"; sid:35;)\n";
    let (got, summary) = sids(&cap, rules);
    assert_all_load(&summary, rules);
    assert_eq!(got, vec![31, 33, 34]);
}

/// Two TCP conversations, each with its handshake: an HTTP/1.1 POST with `Transfer-Encoding: identity` to port 80
/// and its answer, and to port 9000 a payload carrying a BIT STRING with more unused bits than it holds after
/// `NEG` and a repeated `abab!`.
fn conversations(path: &Path) {
    use flowbundle_ingest::{LinkType, PcapWriter, WriterOptions};
    let mut frames = Vec::new();
    let http = [
        &b"POST /up HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: identity\r\nContent-Length: 2\r\n\r\nhi"[..],
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    ];
    let other = [&b"xxNEG\x00\x03\x02\x09\xff--abab!"[..], b"fine"];
    for (port, [req, resp]) in [(80u16, http), (9000, other)] {
        let (c, s) = (40_000u32, 90_000u32);
        frames.push(tcp_frame(port, true, c, 0, 0x02, b""));
        frames.push(tcp_frame(port, false, s, c + 1, 0x12, b""));
        frames.push(tcp_frame(port, true, c + 1, s + 1, 0x10, b""));
        frames.push(tcp_frame(port, true, c + 1, s + 1, 0x18, req));
        let c2 = c + 1 + req.len() as u32;
        frames.push(tcp_frame(port, false, s + 1, c2, 0x18, resp));
        let s2 = s + 1 + resp.len() as u32;
        frames.push(tcp_frame(port, true, c2, s2, 0x11, b""));
        frames.push(tcp_frame(port, false, s2, c2 + 1, 0x11, b""));
        frames.push(tcp_frame(port, true, c2 + 1, s2 + 1, 0x10, b""));
    }
    let file = std::fs::File::create(path).expect("creating the capture");
    let mut w = PcapWriter::new(file, WriterOptions::new(LinkType::ETHERNET)).expect("pcap header");
    for (n, f) in frames.iter().enumerate() {
        w.write_packet(
            1_700_000_000_000_000_000 + n as u64 * 1_000_000,
            f,
            f.len() as u32,
        )
        .expect("writing a packet");
    }
}

/// A TCP segment between 10.0.0.1:50000 (the client) and 10.0.0.2:`port` in an Ethernet frame, with correct IPv4
/// and TCP checksums.
fn tcp_frame(port: u16, to_server: bool, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let (src, dst) = if to_server {
        ([10, 0, 0, 1], [10, 0, 0, 2])
    } else {
        ([10, 0, 0, 2], [10, 0, 0, 1])
    };
    let (sp, dp) = if to_server {
        (50_000, port)
    } else {
        (port, 50_000)
    };
    let mut tcp = Vec::with_capacity(20 + payload.len());
    tcp.extend_from_slice(&sp.to_be_bytes());
    tcp.extend_from_slice(&dp.to_be_bytes());
    tcp.extend_from_slice(&seq.to_be_bytes());
    tcp.extend_from_slice(&ack.to_be_bytes());
    tcp.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    tcp.extend_from_slice(payload);
    wire::tcp::Packet::new_checked(&mut tcp[..])
        .expect("a TCP header")
        .fill_checksum(src.into(), dst.into());
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(20 + tcp.len() as u16).to_be_bytes());
    ip[6] = 0x40;
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst);
    wire::ipv4::Packet::new_checked(&mut ip[..])
        .expect("an IPv4 header")
        .fill_checksum();
    let mut f = vec![0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 6, 0x08, 0x00];
    f.extend_from_slice(&ip);
    f.extend_from_slice(&tcp);
    f
}
