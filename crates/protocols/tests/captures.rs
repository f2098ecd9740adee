//! The HTTP, TLS, QUIC and DNS parsers on real captures from `../shared/data`, through the engine's path
//! ([`FlowApp`] per flow): field values Suricata's regression tests and nDPI's results record for the same
//! captures, and counts over large HTTP captures. Each test skips with a message when the data is absent.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use common::{Key, RunFlow, read_flows};
use flowbundle_protocols::dns::DnsEvent;
use flowbundle_protocols::http::HttpEvent;
use flowbundle_protocols::quic::QuicEvent;
use flowbundle_protocols::tls::TlsEvent;
use flowbundle_protocols::{AppEvent, EventSink, HttpBuffer, Registry};

/// Collects events and HTTP buffers.
#[derive(Default)]
struct Sink {
    events: Vec<AppEvent>,
    buffers: Vec<Buffer>,
}

impl EventSink for Sink {
    fn event(&mut self, e: AppEvent) {
        self.events.push(e);
    }
    fn http_buffer(
        &mut self,
        tx: flowbundle_protocols::http::HttpTx<'_>,
        b: HttpBuffer,
        data: &[u8],
    ) {
        self.buffers.push((tx.tx_id(), b, data.to_vec()));
    }
}

/// Runs every flow of a capture; returns the events per flow.
fn events_per_flow(rel: &str) -> Option<BTreeMap<Key, Sink>> {
    let path = flowbundle_testsupport::data(rel)?;
    let reg = Registry::builtin();
    let flows = read_flows(&path, 100_000);
    let mut out = BTreeMap::new();
    for (k, f) in &flows {
        let mut s = Sink::default();
        f.run(&reg, k, &mut s);
        out.insert(*k, s);
    }
    Some(out)
}

fn quic_events(rel: &str) -> Option<Vec<QuicEvent>> {
    let flows = events_per_flow(rel)?;
    Some(
        flows
            .into_values()
            .flat_map(|s| s.events)
            .filter_map(|e| match e {
                AppEvent::Quic(q) => Some(q),
                _ => None,
            })
            .collect(),
    )
}

fn ext_names(q: &QuicEvent) -> Vec<&str> {
    q.extensions
        .iter()
        .map(|e| e.name.as_deref().unwrap_or("?"))
        .collect()
}

#[test]
fn suricata_quic_v1_sni_and_alpn() {
    let Some(ev) = quic_events("suricata-verify/quic-ietf/input.pcap") else {
        return;
    };
    let q = ev
        .iter()
        .find(|q| q.sni.is_some())
        .expect("a decrypted Initial");
    assert_eq!(q.sni.as_deref(), Some("msquic.net"));
    assert_eq!(q.alpn.first().map(String::as_str), Some("h3-29"));
    let names = ext_names(q);
    assert_eq!(names.get(1), Some(&"server_name"), "{names:?}");
    assert_eq!(names.get(2), Some(&"alpn"), "{names:?}");
    assert_eq!(q.version, "1");
}

/// gQUIC Q046 in cleartext: each of the client's two hellos (the first rejected) is an event with its CYU, as
/// suricata-verify's `quic-alerts` expects Suricata's EVE `quic.cyu` (hash and string).
#[test]
fn suricata_gquic_cyu_of_each_hello() {
    let Some(ev) = quic_events("suricata-verify/quic-alerts/input.pcap") else {
        return;
    };
    let cyu: Vec<(&str, &str)> = ev
        .iter()
        .flat_map(|q| q.cyu.iter().map(|c| (c.hash.as_str(), c.string.as_str())))
        .collect();
    assert_eq!(
        cyu,
        [
            (
                "910a5e3a4d51593bd59a44611544f209",
                "46,PAD-SNI-VER-CCS-UAID-TCID-PDMD-SMHL-ICSL-NONP-MIDS-SCLS-CSCT-COPT-IRTT-CFCW-SFCW"
            ),
            (
                "7b3ceb1adc974ad360cfa634e8d0a730",
                "46,PAD-SNI-STK-SNO-VER-CCS-NONC-AEAD-UAID-SCID-TCID-PDMD-SMHL-ICSL-NONP-PUBS-MIDS-SCLS-KEXS-XLCT-CSCT-COPT-CCRT-IRTT-CFCW-SFCW"
            )
        ]
    );
    assert!(ev.iter().all(|q| q.version == "Q046"));
}

#[test]
fn suricata_quic_v2() {
    let Some(ev) = quic_events("suricata-verify/quic-v2/input.pcap") else {
        return;
    };
    let q = ev
        .iter()
        .find(|q| !q.extensions.is_empty())
        .expect("a decrypted v2 Initial");
    assert_eq!(q.version, "6b3343cf");
    let names = ext_names(q);
    assert_eq!(names.first(), Some(&"status_request"), "{names:?}");
    assert_eq!(names.get(6), Some(&"alpn"), "{names:?}");
    assert_eq!(q.alpn.first().map(String::as_str), Some("h3"));
}

#[test]
fn suricata_quic_clienthello_across_two_initials() {
    let Some(ev) = quic_events("suricata-verify/quic-frag/input.pcap") else {
        return;
    };
    let q = ev
        .iter()
        .find(|q| !q.extensions.is_empty())
        .expect("ClientHello reassembled");
    let names = ext_names(q);
    assert_eq!(names.first(), Some(&"status_request"), "{names:?}");
    assert_eq!(names.get(4), Some(&"alpn"), "{names:?}");
}

#[test]
fn suricata_quic_crypto_frames_out_of_order() {
    let Some(ev) = quic_events("suricata-verify/quic-frag-unordered/input.pcap") else {
        return;
    };
    let q = ev
        .iter()
        .find(|q| !q.extensions.is_empty())
        .expect("ClientHello reassembled");
    let names = ext_names(q);
    assert_eq!(names.first(), Some(&"supported_groups"), "{names:?}");
    assert_eq!(names.get(7), Some(&"server_name"), "{names:?}");
    assert_eq!(q.sni.as_deref(), Some("mastodon.social"));
}

#[test]
fn suricata_quic_ja4() {
    let Some(ev) = quic_events("suricata-verify/ja4-quic/input.pcap") else {
        return;
    };
    let ja4: Vec<_> = ev.iter().filter_map(|q| q.ja4.as_deref()).collect();
    assert!(!ja4.is_empty());
    assert!(
        ja4.iter()
            .all(|j| *j == "q13d0310h3_55b375c5d22e_cd85d2d88918"),
        "{ja4:?}"
    );
}

fn tls_events(rel: &str) -> Option<Vec<TlsEvent>> {
    let flows = events_per_flow(rel)?;
    Some(
        flows
            .into_values()
            .flat_map(|s| s.events)
            .filter_map(|e| match e {
                AppEvent::Tls(t) => Some(t),
                _ => None,
            })
            .collect(),
    )
}

#[test]
fn suricata_tls_ja4() {
    let Some(ev) = tls_events("suricata-verify/ja4-tls-quic/input.pcap") else {
        return;
    };
    assert!(
        ev.iter()
            .any(|t| t.ja4.as_deref() == Some("t13d1516h2_8daaf6152771_e5627efa2ab1")),
        "{:?}",
        ev.iter().map(|t| &t.ja4).collect::<Vec<_>>()
    );
}

/// nDPI's result files list, per TLS flow, the JA3 of the ClientHello (`[JA3C: ...]`), the JA4 (`[JA4: ...]`)
/// and the SNI (`[Hostname/SNI: ...]`). Compare ours, flow by flow, over every capture.
#[test]
fn tls_fingerprints_match_ndpi() {
    let Some(results) = flowbundle_testsupport::data("ndpi/result") else {
        return;
    };
    let reg = Registry::builtin();
    let (mut flows_cmp, mut ja3_ok, mut ja4_ok, mut sni_ok, mut sni_n) = (0, 0, 0, 0, 0);
    let mut bad: Vec<String> = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&results)
        .into_iter()
        .flatten()
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let out = entry.path();
        let Some(name) = out
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".out"))
        else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&out) else {
            continue;
        };
        let wanted: Vec<_> = text.lines().filter_map(parse_ndpi_tls_line).collect();
        if wanted.is_empty() {
            continue;
        }
        let Some(pcap) = flowbundle_testsupport::data(&format!("ndpi/pcap/{name}")) else {
            continue;
        };
        let flows = read_flows(&pcap, 64);
        for w in wanted {
            let Some(flow) = flows.get(&w.key) else {
                continue;
            };
            let mut s = Sink::default();
            flow.run(&reg, &w.key, &mut s);
            let Some(t) = s.events.iter().find_map(|e| match e {
                AppEvent::Tls(t) if t.ja3.is_some() => Some(t),
                _ => None,
            }) else {
                continue;
            };
            flows_cmp += 1;
            let ja3 = t.ja3.as_ref().map(|j| j.hash.as_str());
            if ja3 == w.ja3.as_deref() || w.ja3.is_none() {
                ja3_ok += 1;
            } else {
                bad.push(format!("{name} {:?} JA3 {ja3:?} != {:?}", w.key, w.ja3));
            }
            if ja4_equivalent(t.ja4.as_deref(), w.ja4.as_deref()) {
                ja4_ok += 1;
            } else {
                bad.push(format!("{name} {:?} JA4 {:?} != {:?}", w.key, t.ja4, w.ja4));
            }
            if let Some(sni) = &w.sni {
                sni_n += 1;
                if t.sni.as_deref() == Some(sni.as_str()) {
                    sni_ok += 1;
                } else {
                    bad.push(format!("{name} {:?} SNI {:?} != {sni:?}", w.key, t.sni));
                }
            }
        }
    }
    eprintln!(
        "TLS flows compared with nDPI: {flows_cmp}; JA3 {ja3_ok}, JA4 (up to nDPI's deviations) {ja4_ok}, SNI {sni_ok}/{sni_n}"
    );
    for b in bad.iter().take(20) {
        eprintln!("  {b}");
    }
    assert!(flows_cmp > 300, "too few TLS flows compared: {flows_cmp}");
    let pct = |n: usize| 100.0 * n as f64 / flows_cmp as f64;
    assert!(pct(ja3_ok) >= 97.0, "JA3 agreement {:.1}%", pct(ja3_ok));
    assert!(pct(ja4_ok) >= 97.0, "JA4 agreement {:.1}%", pct(ja4_ok));
    assert!(
        sni_ok as f64 >= 0.97 * sni_n as f64,
        "SNI agreement {sni_ok}/{sni_n}"
    );
}

/// JA4 equality up to the three places where nDPI 4.x departs from the FoxIO specification: the `d`/`i`
/// character (nDPI looks at its own hostname, the spec at the SNI extension), the ALPN characters (nDPI takes
/// the first two characters, the spec the first and last: `http/1.1` is `h1`), and a ClientHello without
/// extensions (nDPI hashes the empty string, the spec writes twelve zeros).
fn ja4_equivalent(ours: Option<&str>, ndpi: Option<&str>) -> bool {
    let (Some(a), Some(b)) = (ours, ndpi) else {
        return ndpi.is_none();
    };
    let (pa, pb): (Vec<&str>, Vec<&str>) = (a.split('_').collect(), b.split('_').collect());
    if pa.len() != 3 || pb.len() != 3 || pa[0].len() != 10 || pb[0].len() != 10 {
        return false;
    }
    let empty = |c: &str| c == "000000000000" || c == "e3b0c44298fc";
    pa[0][..3] == pb[0][..3]
        && pa[0][4..8] == pb[0][4..8]
        && pa[1] == pb[1]
        && (pa[2] == pb[2] || (empty(pa[2]) && empty(pb[2])))
}

struct NdpiTls {
    key: Key,
    ja3: Option<String>,
    ja4: Option<String>,
    sni: Option<String>,
}

/// `1 TCP 192.168.1.2:443 <-> [::1]:5 [proto: 91/TLS]... [JA3C: x]... [JA4: y]... [Hostname/SNI: z]`
fn parse_ndpi_tls_line(line: &str) -> Option<NdpiTls> {
    let (key, _) = parse_ndpi_flow(line)?;
    if !key.tcp {
        return None;
    }
    let ja3 = ndpi_field(line, "[JA3C: ")?;
    Some(NdpiTls {
        key,
        ja3: Some(ja3),
        ja4: ndpi_field(line, "[JA4: "),
        sni: ndpi_field(line, "[Hostname/SNI: "),
    })
}

/// The flow key and master protocol of an nDPI result line (`N L4 A <-> B [proto: ID/MASTER.APP]...`).
fn parse_ndpi_flow(line: &str) -> Option<(Key, String)> {
    let mut it = line.split_whitespace();
    it.next()?; // flow number
    let tcp = match it.next()? {
        "TCP" => true,
        "UDP" => false,
        _ => return None,
    };
    let a = parse_endpoint(it.next()?)?;
    if !matches!(it.next()?, "<->" | "->") {
        return None;
    }
    let b = parse_endpoint(it.next()?)?;
    let proto = ndpi_field(line, "[proto: ")?;
    let name = proto.split('/').nth(1)?.split('.').next()?.to_string();
    Some((Key::new(tcp, a, b), name))
}

fn ndpi_field(line: &str, tag: &str) -> Option<String> {
    let start = line.find(tag)? + tag.len();
    let end = line[start..].find(']')?;
    Some(line[start..start + end].to_string())
}

/// Lowercase, `\xHH` escapes and characters outside `[a-z0-9.-]` folded to `_` (nDPI writes `?` or `_`).
fn normalize_host(h: &str) -> String {
    let mut out = String::new();
    let mut chars = h.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&'x') {
            chars.next();
            chars.next();
            chars.next();
            out.push('_');
        } else if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
            out.push(c.to_ascii_lowercase());
        } else {
            out.push('_');
        }
    }
    out
}

/// nDPI's `Hostname/SNI` for QUIC (the ClientHello's SNI, decrypted from the Initial), DNS (the first query name)
/// and HTTP (the Host header): ours must say the same, flow by flow.
#[test]
fn hostnames_match_ndpi() {
    let Some(results) = flowbundle_testsupport::data("ndpi/result") else {
        return;
    };
    let reg = Registry::builtin();
    let mut tally: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    let mut bad = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&results)
        .into_iter()
        .flatten()
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let out = entry.path();
        let Some(name) = out
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".out"))
        else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&out) else {
            continue;
        };
        let wanted: Vec<_> = text
            .lines()
            .filter_map(|l| {
                let (key, master) = parse_ndpi_flow(l)?;
                let host = ndpi_field(l, "[Hostname/SNI: ")?;
                matches!(master.as_str(), "QUIC" | "DNS" | "HTTP").then_some((key, master, host))
            })
            .collect();
        if wanted.is_empty() {
            continue;
        }
        let Some(pcap) = flowbundle_testsupport::data(&format!("ndpi/pcap/{name}")) else {
            continue;
        };
        let flows = read_flows(&pcap, 64);
        for (key, master, host) in wanted {
            let Some(flow) = flows.get(&key) else {
                continue;
            };
            let mut s = Sink::default();
            flow.run(&reg, &key, &mut s);
            let ours: Vec<String> = s
                .events
                .iter()
                .filter_map(|e| match (e, master.as_str()) {
                    (AppEvent::Quic(q), "QUIC") => q.sni.clone(),
                    (AppEvent::Dns(d), "DNS") => d.rrname.clone(),
                    (AppEvent::Http(h), "HTTP") => h.hostname.clone(),
                    _ => None,
                })
                .collect();
            let t = tally.entry(master.clone()).or_default();
            t.0 += 1;
            // HTTP and QUIC: the first name. DNS: nDPI keeps one of the flow's query names (not always the first),
            // lowercased, with characters outside [a-z0-9.-] replaced, and long names cut to their tail.
            let want = normalize_host(&host);
            let agree = if master == "DNS" {
                ours.iter()
                    .map(|o| normalize_host(o))
                    .any(|o| o == want || (want.len() >= 40 && o.ends_with(&want)))
            } else {
                ours.first().is_some_and(|o| o.eq_ignore_ascii_case(&host))
            };
            if agree {
                t.1 += 1;
            } else {
                bad.push(format!(
                    "{name} {key:?} {master}: ours {ours:?} nDPI {host:?}"
                ));
            }
        }
    }
    eprintln!("hostnames vs nDPI (flows, equal): {tally:?}");
    for b in bad
        .iter()
        .filter(|b| !b.contains("DNS:"))
        .chain(bad.iter().filter(|b| b.contains("DNS:")).take(10))
    {
        eprintln!("  {b}");
    }
    for (proto, (n, ok)) in &tally {
        assert!(*n > 20, "{proto}: too few flows compared ({n})");
        assert!(
            f64::from(*ok) >= 0.9 * f64::from(*n),
            "{proto}: {ok}/{n} hostnames agree"
        );
    }
}

fn parse_endpoint(s: &str) -> Option<(IpAddr, u16)> {
    let (ip, port) = s.rsplit_once(':')?;
    let ip = ip.trim_start_matches('[').trim_end_matches(']');
    Some((ip.parse().ok()?, port.parse().ok()?))
}

fn dns_events(rel: &str) -> Option<Vec<DnsEvent>> {
    let flows = events_per_flow(rel)?;
    Some(
        flows
            .into_values()
            .flat_map(|s| s.events)
            .filter_map(|e| match e {
                AppEvent::Dns(d) => Some(d),
                _ => None,
            })
            .collect(),
    )
}

#[test]
fn suricata_dns_nxdomain_soa_authority() {
    let Some(ev) =
        dns_events("suricata-verify/dns-eve-v2-udp-nxdomain-soa/dns-udp-nxdomain-soa.pcap")
    else {
        return;
    };
    let a = ev.iter().find(|d| d.is_response()).expect("an answer");
    assert_eq!(a.rcode.as_deref(), Some("NXDOMAIN"));
    let auth = a.authorities.first().expect("an authority record");
    assert_eq!(
        (auth.rrname.as_str(), auth.rrtype.as_str(), auth.ttl),
        ("oisf.net", "SOA", 899)
    );
    let soa = auth.soa.as_ref().expect("SOA data");
    assert_eq!(soa.mname, "ns-110.awsdns-13.com");
    assert_eq!(soa.rname, "awsdns-hostmaster.amazon.com");
    assert_eq!(
        (soa.serial, soa.refresh, soa.retry, soa.expire, soa.minimum),
        (1, 7200, 900, 1_209_600, 86400)
    );
}

#[test]
fn dns_capture_queries_pair_with_answers() {
    let Some(ev) = dns_events("reassembly/DnsPackets.pcap") else {
        return;
    };
    let queries = ev.iter().filter(|d| !d.is_response()).count();
    let answers: Vec<_> = ev.iter().filter(|d| d.is_response()).collect();
    eprintln!(
        "DnsPackets.pcap: {queries} queries, {} answers",
        answers.len()
    );
    assert!(queries > 10 && answers.len() > 10);
    // Every answer names what was asked, and A/AAAA answers have addresses.
    assert!(answers.iter().all(|a| a.rcode.is_some()));
    assert!(answers.iter().filter(|a| a.rrname.is_some()).count() * 10 >= answers.len() * 9);
    let addrs = answers
        .iter()
        .flat_map(|a| &a.answers)
        .filter(|r| r.rrtype == "A" || r.rrtype == "AAAA");
    assert!(addrs.clone().count() > 0);
    assert!(addrs.clone().all(|r| {
        r.rdata
            .as_deref()
            .is_some_and(|d| d.contains('.') || d.contains(':'))
    }));
}

/// An HTTP buffer as delivered: transaction, which buffer, bytes.
type Buffer = (u64, HttpBuffer, Vec<u8>);

fn http_events(rel: &str) -> Option<(Vec<HttpEvent>, Vec<Buffer>)> {
    let flows = events_per_flow(rel)?;
    let mut ev = Vec::new();
    let mut bufs = Vec::new();
    for s in flows.into_values() {
        bufs.extend(s.buffers);
        ev.extend(s.events.into_iter().filter_map(|e| match e {
            AppEvent::Http(h) => Some(h),
            _ => None,
        }));
    }
    Some((ev, bufs))
}

#[test]
fn http_requests_capture() {
    let Some((ev, bufs)) = http_events("reassembly/4KHttpRequests.pcap") else {
        return;
    };
    let with_method = ev.iter().filter(|h| h.http_method.is_some()).count();
    let methods: HashMap<_, usize> =
        ev.iter()
            .filter_map(|h| h.http_method.clone())
            .fold(HashMap::new(), |mut m, k| {
                *m.entry(k).or_default() += 1;
                m
            });
    eprintln!(
        "4KHttpRequests.pcap: {} transactions, {with_method} requests, methods {methods:?}",
        ev.len()
    );
    // tshark (`-Y http.request`) finds 139 requests in this capture of request segments with holes.
    assert!(with_method >= 139, "{with_method}");
    assert!(
        methods
            .keys()
            .all(|m| flowbundle_protocols::http::METHODS.contains(&m.as_bytes())),
        "{methods:?}"
    );
    // Every request's method and URI reach the rules engine, and every Host header.
    let uris = bufs.iter().filter(|b| b.1 == HttpBuffer::Uri).count();
    assert_eq!(uris, with_method);
    let hosts = bufs.iter().filter(|b| b.1 == HttpBuffer::Host).count();
    assert_eq!(hosts, ev.iter().filter(|h| h.hostname.is_some()).count());
}

#[test]
fn http_responses_capture() {
    let Some((ev, bufs)) = http_events("reassembly/650HttpResponses.pcap") else {
        return;
    };
    let with_status = ev.iter().filter(|h| h.status.is_some()).count();
    let bodies = bufs
        .iter()
        .filter(|b| b.1 == HttpBuffer::ResponseBody)
        .count();
    let gz = ev.iter().filter(|h| h.content_encoding.is_some()).count();
    eprintln!(
        "650HttpResponses.pcap: {} transactions, {with_status} responses, {bodies} bodies, {gz} decoded",
        ev.len()
    );
    // tshark (`-Y http.response`) finds 365 responses in this capture of response segments with holes.
    assert!(with_status >= 365, "{with_status}");
    assert!(bodies > 0 && gz > 0);
}

/// Every gzip/deflate response body in the nDPI HTTP captures inflates to text (HTML, JSON, JS, XML, CSS) or a
/// known binary format, never to garbage; Content-Type says which.
#[test]
fn http_compressed_bodies_inflate() {
    let mut decoded = 0;
    for rel in [
        "ndpi/pcap/http-manipulated.pcap",
        "ndpi/pcap/1kxun.pcap",
        "ndpi/pcap/http_ipv6.pcap",
    ] {
        let Some(flows) = events_per_flow(rel) else {
            continue;
        };
        for s in flows.values() {
            for e in &s.events {
                let AppEvent::Http(h) = e else { continue };
                if h.content_encoding.is_none() {
                    continue;
                }
                let Some(body) = s
                    .buffers
                    .iter()
                    .find(|b| b.0 == h.tx_id && b.1 == HttpBuffer::ResponseBody)
                    .map(|b| &b.2)
                else {
                    continue;
                };
                let head = &body[..body.len().min(512)];
                let bad = String::from_utf8_lossy(head)
                    .chars()
                    .filter(|&c| c == char::REPLACEMENT_CHARACTER)
                    .count();
                let ct = h.http_content_type.as_deref().unwrap_or("");
                if ct.contains("text")
                    || ct.contains("json")
                    || ct.contains("javascript")
                    || ct.contains("xml")
                {
                    assert!(
                        bad <= 1,
                        "{rel} tx {}: {ct} body does not look like text: {:?}",
                        h.tx_id,
                        String::from_utf8_lossy(&body[..body.len().min(64)])
                    );
                }
                decoded += 1;
            }
        }
    }
    eprintln!("compressed HTTP bodies inflated: {decoded}");
}
