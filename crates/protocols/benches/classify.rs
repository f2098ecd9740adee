//! What identification and parsing cost per payload, against references measured in the same run (record ratios,
//! not absolute times: CONTRIBUTING.md).
//!
//! * `probe/unknown_*`: the first payload of a flow no detector claims, probed by the whole built-in registry.
//!   The ANCS'10 paper puts an unknown protocol at ~600 cycles per packet; this is the classifier's share.
//! * `probe/tls_client_hello`, `probe/http_request`: a flow decided on its first payload.
//! * `http/plain_*` vs `http/gzip_*`: a 64 KiB HTML response parsed in 1,460-byte segments, raw and gzip-encoded
//!   (the paper's expensive case: a compressed HTTP body).
//! * `quic/initial`: one client Initial decrypted and its ClientHello parsed.
//!
//! `cargo bench -p flowbundle-protocols --bench classify`

use std::hint::black_box;
use std::io::Write;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flowbundle_protocols::http::HttpParser;
use flowbundle_protocols::quic::QuicParser;
use flowbundle_protocols::{
    AppEvent, Classifier, Direction, EventSink, HttpBuffer, Limits, Parser, Registry, Transport,
};

/// A sink that keeps nothing (what the engine pays is the parsing, not our storage).
struct Discard(u64);

impl EventSink for Discard {
    fn event(&mut self, _e: AppEvent) {
        self.0 += 1;
    }
    fn http_buffer(
        &mut self,
        _tx: flowbundle_protocols::http::HttpTx<'_>,
        _b: HttpBuffer,
        data: &[u8],
    ) {
        self.0 += data.len() as u64;
    }
}

/// Deterministic pseudo-random bytes (xorshift), so runs compare.
fn noise(n: usize, mut x: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn html(n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n);
    let mut i = 0u64;
    while v.len() < n {
        writeln!(
            v,
            "<tr><td class=\"c{}\">row {i}</td><td>{}</td></tr>",
            i % 7,
            i * 2_654_435_761 % 1_000_003
        )
        .unwrap();
        i += 1;
    }
    v.truncate(n);
    v
}

fn response(body: &[u8], gzip: bool) -> Vec<u8> {
    let body = if gzip {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(body).unwrap();
        e.finish().unwrap()
    } else {
        body.to_vec()
    };
    let enc = if gzip {
        "Content-Encoding: gzip\r\n"
    } else {
        ""
    };
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n{enc}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(&body);
    r
}

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// RFC 9001 Appendix A ClientHello in a TLS record.
fn client_hello_record() -> Vec<u8> {
    let ch = unhex(
        "010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e86804fe3a47f06a2b69484c00000413011302010000c0000000\
         10000e00000b6578616d706c652e636f6dff01000100000a00080006001d0017001800100007000504616c706e0005000501000000\
         00003300260024001d00209370b2c9caa47fbabaf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b0003020304000d00\
         10000e0403050306030203080408050806002d00020101001c00024001003900320408ffffffffffffffff05048000ffff07048000\
         ffff0801100104800075300901100f088394c8f03e51570806048000ffff",
    );
    let mut r = vec![0x16, 3, 1];
    r.extend_from_slice(&(ch.len() as u16).to_be_bytes());
    r.extend_from_slice(&ch);
    r
}

fn bench_probe(c: &mut Criterion) {
    let reg = Registry::builtin();
    let mut g = c.benchmark_group("probe");
    let unknown = noise(200, 0x9e37_79b9_7f4a_7c15);
    let hello = client_hello_record();
    let request =
        b"GET /index.html HTTP/1.1\r\nHost: example.com\r\nUser-Agent: bench\r\n\r\n".to_vec();
    for (name, t, port, data) in [
        ("unknown_tcp", Transport::Tcp, 40000u16, &unknown),
        ("unknown_udp", Transport::Udp, 40000, &unknown),
        ("tls_client_hello", Transport::Tcp, 443, &hello),
        ("http_request", Transport::Tcp, 80, &request),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut cl = Classifier::new(&reg, t, 50000, port);
                black_box(cl.feed(&reg, Direction::ToServer, black_box(data)))
            })
        });
    }
    g.finish();
}

fn bench_http(c: &mut Criterion) {
    let body = html(64 * 1024);
    let mut g = c.benchmark_group("http");
    let request = b"GET /table.html HTTP/1.1\r\nHost: example.com\r\n\r\n";
    for (name, gzip) in [("plain_64k", false), ("gzip_64k", true)] {
        let resp = response(&body, gzip);
        let segments = resp.chunks(1460).count() as u64;
        g.throughput(Throughput::Elements(segments));
        let limits = Limits {
            http_response_body_cap: 1 << 20,
            ..Limits::default()
        };
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut p = HttpParser::new(&limits);
                let mut sink = Discard(0);
                p.parse(Direction::ToServer, request, 0, &mut sink);
                for seg in resp.chunks(1460) {
                    p.parse(Direction::ToClient, seg, 0, &mut sink);
                }
                p.finish(&mut sink);
                black_box(sink.0)
            })
        });
    }
    g.finish();
}

fn bench_quic(c: &mut Criterion) {
    // The RFC 9001 client Initial, rebuilt from its published header and payload by the parser's own test
    // vectors would need the encrypting side; here the decrypting side runs on a real Initial from the tests.
    let Some(path) = flowbundle_testsupport::data("suricata-verify/quic-v2/input.pcap") else {
        return;
    };
    let pcap = std::fs::read(&path).expect("reading the QUIC capture");
    let pkt = first_udp_payload(&pcap).expect("a UDP datagram in the QUIC capture");
    let limits = Limits::default();
    c.bench_function("quic/initial", |b| {
        b.iter(|| {
            let mut p = QuicParser::new(&limits);
            let mut sink = Discard(0);
            p.parse(Direction::ToServer, black_box(&pkt), 0, &mut sink);
            black_box(sink.0)
        })
    });
}

/// The UDP payload of the first packet of a little-endian pcap with Ethernet or loopback framing, IPv4.
fn first_udp_payload(pcap: &[u8]) -> Option<Vec<u8>> {
    let linktype = u32::from_le_bytes(pcap.get(20..24)?.try_into().ok()?);
    let caplen = u32::from_le_bytes(pcap.get(32..36)?.try_into().ok()?) as usize;
    let frame = pcap.get(40..40 + caplen)?;
    let ip = match linktype {
        1 => frame.get(14..)?,
        0 => frame.get(4..)?,
        _ => return None,
    };
    let ihl = usize::from(ip.first()? & 0x0f) * 4;
    let udp = ip.get(ihl..)?;
    let len = usize::from(u16::from_be_bytes([*udp.get(4)?, *udp.get(5)?]));
    Some(udp.get(8..len)?.to_vec())
}

criterion_group!(benches, bench_probe, bench_http, bench_quic);
criterion_main!(benches);
