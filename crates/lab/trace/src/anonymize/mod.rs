//! # `trace anonymize`: sanitized captures that keep their flow structure
//!
//! Rewrites every IP address of a capture with one of four methods and optionally removes payloads, in one
//! streaming pass:
//!
//! | method | what an address becomes | state |
//! |---|---|---|
//! | `sn1` | the next of `10.0.0.1`, `10.0.0.2`, ... (IPv6 `fd00::1`, ...) in order of first appearance | a table of the addresses seen, capped |
//! | `sn2` | the same, the incremented octet chosen round-robin (`10.0.0.1`, `10.0.1.1`, `10.1.1.1`, `11.1.1.1`, ...) | a capped table |
//! | `sn3` | a keyed pseudo-random permutation of the address (random-looking, the same in every run with one key) | none |
//! | `prefix` | Crypto-PAn: a keyed permutation that preserves the length of the common prefix of any two addresses | none (a cache) |
//!
//! SN1–SN3 are the three sanitizations of Verdú's thesis (§3.3.1, Table 3.1), which showed that stateful
//! processing sees no significant difference between real and sanitized traffic; `prefix` is what public
//! repositories use when subnet structure must survive. Every method is injective and consistent across the whole
//! trace, so **the flow count, each flow's packets and bytes, and the unique flow rate are exactly those of the
//! input** (the tests check this on real captures and by property tests). Checksums are fixed incrementally
//! ([`crate::rewrite::addresses`]): IPv4 header, TCP, UDP, ICMPv6, the packets quoted in ICMP errors; ARP's
//! addresses are rewritten too; with `tunnels`, the inner header of GRE, IP-in-IP, VXLAN and GTP-U packets.
//!
//! ## Payloads
//! `--payload strip` keeps each packet up to the end of its transport header, `--payload truncate:N` keeps `N`
//! bytes of payload more. The cut is made the way a capture's snap length cuts: the captured length shrinks, the
//! **wire length (`orig_len`) and every header stay as they were**. That keeps flow sizes in bytes, TCP sequence
//! numbers (tshark's sequence analysis sees no missing segment) and the checksums, which remain correct for the
//! bytes that were on the wire. The alternative, shortening the packets and their length fields, would change
//! every flow's bytes and break the sequence-number space. Non-IP frames keep their link header only (ARP is
//! kept whole: it is all header).
//!
//! ## Addresses in DNS
//! With payloads kept, DNS answers still carry real addresses: the A and AAAA records of every DNS message (UDP
//! port 53 or 5353) are found and counted. With `dns` (`--dns`) they are mapped as the IP headers are, so that a
//! lookup's answer names the anonymized server the client goes on to reach, and the UDP checksum is fixed
//! incrementally; without it they are left and counted, and the command says so.
//!
//! ## Keys
//! `sn3` and `prefix` take `--key`: 64 hex digits are used as the 32 raw bytes of a Crypto-PAn key (compatible with
//! other Crypto-PAn tools); any other string is hashed (SHA-256). `prefix` refuses to run without a key (a default
//! key would make the mapping public); `sn3` falls back to `--seed`. `sn1`/`sn2` take no key.

pub mod dns;
pub mod keyed;
pub mod sequential;

use std::path::Path;
use std::str::FromStr;

use flowbundle_decode::{DecodeOptions, L4, decode_bytes};
use flowbundle_ingest::{CaptureReader, LinkType};
use serde::Serialize;
use sha2::{Digest, Sha256};

pub use keyed::{CryptoPan, Sn3};
pub use sequential::{Order, Sequential};

use crate::rewrite::progress::{Bar, TICK_EVERY};
use crate::rewrite::{AddressMap, AddressRewriter, Output, RewriteStats, RunCounts, ToolError};
use crate::stats::Progress;

/// Default cap on distinct addresses for `sn1`/`sn2` (about 100 MiB of table at most).
pub const DEFAULT_MAX_ADDRESSES: usize = 1 << 22;

/// An anonymization method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Sn1,
    Sn2,
    Sn3,
    Prefix,
}

impl FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Method, String> {
        match s.to_ascii_lowercase().as_str() {
            "sn1" => Ok(Method::Sn1),
            "sn2" => Ok(Method::Sn2),
            "sn3" => Ok(Method::Sn3),
            "prefix" | "cryptopan" | "crypto-pan" => Ok(Method::Prefix),
            _ => Err(format!(
                "unknown anonymization method `{s}` (sn1, sn2, sn3 or prefix)"
            )),
        }
    }
}

/// What happens to payloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadMode {
    /// Unchanged.
    Keep,
    /// Cut after the transport header.
    Strip,
    /// Keep this many payload bytes.
    Truncate(u32),
}

impl FromStr for PayloadMode {
    type Err = String;
    fn from_str(s: &str) -> Result<PayloadMode, String> {
        match s {
            "keep" => Ok(PayloadMode::Keep),
            "strip" => Ok(PayloadMode::Strip),
            _ => match s.strip_prefix("truncate:") {
                Some(n) => n
                    .parse()
                    .map(PayloadMode::Truncate)
                    .map_err(|_| format!("`{s}`: truncate:N needs a byte count, e.g. truncate:64")),
                None => Err(format!(
                    "unknown payload mode `{s}` (keep, strip or truncate:N)"
                )),
            },
        }
    }
}

/// How to anonymize.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnonymizeConfig {
    pub method: Method,
    /// Secret for `sn3` and `prefix` (see the module documentation).
    pub key: Option<String>,
    /// Seed for `sn3` without a key.
    pub seed: u64,
    pub payload: PayloadMode,
    /// Rewrite the inner header of tunnelled packets too.
    pub tunnels: bool,
    /// Cap on distinct addresses for `sn1`/`sn2`.
    pub max_addresses: usize,
    /// Map the addresses of DNS A/AAAA records too (see the module documentation).
    pub dns: bool,
    pub progress: Progress,
}

impl AnonymizeConfig {
    /// A configuration with defaults (payload kept, no tunnels, default cap, no progress).
    pub fn new(method: Method) -> AnonymizeConfig {
        AnonymizeConfig {
            method,
            key: None,
            seed: 0,
            payload: PayloadMode::Keep,
            tunnels: false,
            max_addresses: DEFAULT_MAX_ADDRESSES,
            dns: false,
            progress: Progress::Hidden,
        }
    }
}

/// What an anonymization did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AnonymizeReport {
    pub counts: RunCounts,
    pub rewrite: RewriteStats,
    /// Distinct addresses assigned (`sn1`/`sn2`; 0 for the keyed methods, which keep no table).
    pub distinct_addresses: u64,
    /// Packets whose captured bytes were cut by the payload mode, and the bytes cut.
    pub payload_cut_packets: u64,
    pub payload_cut_bytes: u64,
    /// Addresses of DNS A/AAAA records mapped (with `dns`), and left as they were (without it).
    pub dns_addresses_mapped: u64,
    pub dns_addresses_left: u64,
}

/// A 32-byte Crypto-PAn key from `--key`: 64 hex digits as raw bytes, anything else hashed.
pub fn key_bytes(key: &str) -> [u8; 32] {
    let k = key.trim();
    if k.len() == 64 && k.bytes().all(|b| b.is_ascii_hexdigit()) {
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&k[2 * i..2 * i + 2], 16).unwrap_or(0);
        }
        return out;
    }
    Sha256::digest(k.as_bytes()).into()
}

/// The address map a configuration asks for.
fn make_map(cfg: &AnonymizeConfig) -> Result<Box<dyn AddressMap>, ToolError> {
    Ok(match cfg.method {
        Method::Sn1 | Method::Sn2 => {
            if cfg.key.is_some() {
                return Err(ToolError::usage(
                    "--key is for the keyed methods (sn3, prefix); sn1 and sn2 number addresses in order",
                ));
            }
            let order = if cfg.method == Method::Sn1 {
                Order::Sn1
            } else {
                Order::Sn2
            };
            Box::new(Sequential::new(order, cfg.max_addresses))
        }
        Method::Sn3 => {
            let material: [u8; 32] = match &cfg.key {
                Some(k) => key_bytes(k),
                None => Sha256::digest(format!("flowbundle sn3 seed {}", cfg.seed)).into(),
            };
            let mut k = [0u8; 16];
            k.copy_from_slice(&Sha256::digest(material)[..16]);
            Box::new(Sn3::new(k))
        }
        Method::Prefix => match &cfg.key {
            Some(k) if !k.trim().is_empty() => Box::new(CryptoPan::new(key_bytes(k))),
            _ => {
                return Err(ToolError::usage(
                    "prefix-preserving anonymization needs a secret --key (64 hex digits, or any passphrase)",
                ));
            }
        },
    })
}

/// The captured length to keep of a packet under `mode` (`None`: keep everything).
fn payload_cut(link: LinkType, data: &[u8], mode: PayloadMode) -> Option<usize> {
    let extra = match mode {
        PayloadMode::Keep => return None,
        PayloadMode::Strip => 0,
        PayloadMode::Truncate(n) => n as usize,
    };
    let d = decode_bytes(link, data, &DecodeOptions::default());
    let start = match d.ip {
        Some(ip) => {
            let after_ip = d.l3_offset as usize + usize::from(ip.header_len);
            match d.l4 {
                L4::None if d.payload_offset == 0 => (d.l4_offset as usize).max(after_ip),
                _ => (d.payload_offset as usize).max(after_ip),
            }
        }
        None => {
            // ARP is all header: keep it. Anything else: keep the link header.
            let arp = match link {
                LinkType::ETHERNET => data.get(12..14) == Some(&[0x08, 0x06][..]),
                _ => false,
            };
            if arp {
                return None;
            }
            match link {
                LinkType::ETHERNET => 14,
                LinkType::LINUX_SLL => 16,
                LinkType::LINUX_SLL2 => 20,
                LinkType::NULL | LinkType::LOOP => 4,
                _ => 0,
            }
        }
    };
    let keep = start.saturating_add(extra);
    (keep < data.len()).then_some(keep)
}

/// Anonymizes packets one at a time; [`anonymize_file`] runs it over a file.
pub struct Anonymizer {
    map: Box<dyn AddressMap>,
    rewriter: AddressRewriter,
    payload: PayloadMode,
    method: Method,
    buf: Vec<u8>,
    cut_packets: u64,
    cut_bytes: u64,
    dns: bool,
    /// Offsets and lengths of the DNS addresses of the packet at hand.
    dns_spots: Vec<(usize, usize)>,
    dns_mapped: u64,
    dns_left: u64,
}

impl std::fmt::Debug for Anonymizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anonymizer")
            .field("method", &self.method)
            .field("payload", &self.payload)
            .finish_non_exhaustive()
    }
}

impl Anonymizer {
    /// An anonymizer for `cfg`; refuses a missing or misplaced key.
    pub fn new(cfg: &AnonymizeConfig) -> Result<Anonymizer, ToolError> {
        Ok(Anonymizer {
            map: make_map(cfg)?,
            rewriter: AddressRewriter::new(cfg.tunnels),
            payload: cfg.payload,
            method: cfg.method,
            buf: Vec::with_capacity(2048),
            cut_packets: 0,
            cut_bytes: 0,
            dns: cfg.dns,
            dns_spots: Vec::new(),
            dns_mapped: 0,
            dns_left: 0,
        })
    }

    /// Anonymizes one frame of link type `link`; returns the bytes to write (the wire length is unchanged).
    pub fn packet(&mut self, link: LinkType, data: &[u8]) -> Result<&[u8], ToolError> {
        self.buf.clear();
        self.buf.extend_from_slice(data);
        self.rewriter
            .rewrite(link, &mut self.buf, self.map.as_mut())?;
        self.dns_addresses(link)?;
        if let Some(keep) = payload_cut(link, &self.buf, self.payload) {
            self.cut_packets += 1;
            self.cut_bytes += (self.buf.len() - keep) as u64;
            self.buf.truncate(keep);
        }
        Ok(&self.buf)
    }

    /// Finds the addresses of DNS A/AAAA records in the packet in `buf`; maps them (fixing the UDP checksum) with
    /// `dns`, counts them either way.
    fn dns_addresses(&mut self, link: LinkType) -> Result<(), ToolError> {
        self.dns_spots.clear();
        let d = decode_bytes(link, &self.buf, &DecodeOptions::default());
        let L4::Udp(u) = d.l4 else {
            return Ok(());
        };
        if !(dns::is_dns_port(u.src_port) || dns::is_dns_port(u.dst_port)) {
            return Ok(());
        }
        let (udp, base) = (d.l4_offset as usize, d.payload_offset as usize);
        let spots = &mut self.dns_spots;
        dns::for_each_address(d.payload, |o, l| spots.push((base + o, l)));
        if !self.dns {
            self.dns_left += self.dns_spots.len() as u64;
            return Ok(());
        }
        for &(at, len) in &self.dns_spots {
            let Some(bytes) = self.buf.get(at..at + len) else {
                continue;
            };
            let old_addr = match len {
                4 => std::net::IpAddr::from(<[u8; 4]>::try_from(bytes).unwrap_or_default()),
                _ => std::net::IpAddr::from(<[u8; 16]>::try_from(bytes).unwrap_or_default()),
            };
            let new: Vec<u8> = match self.map.map(old_addr)? {
                std::net::IpAddr::V4(a) => a.octets().to_vec(),
                std::net::IpAddr::V6(a) => a.octets().to_vec(),
            };
            // The checksum's words start at the UDP header: re-sum from an even offset within it.
            // (an odd-length region at the very end is padded with zero by the sum, as the checksum pads it).
            let start = udp + ((at - udp) & !1);
            let mut end = at + len;
            if (end - start) % 2 == 1 && end < self.buf.len() {
                end += 1;
            }
            let old = self.buf[start..end].to_vec();
            self.buf[at..at + len].copy_from_slice(&new);
            if let Some(field) = self.buf.get(udp + 6..udp + 8) {
                let c = u16::from_be_bytes([field[0], field[1]]);
                if c != 0 {
                    let mut v =
                        flowbundle_decode::wire::checksum::adjust(c, &old, &self.buf[start..end]);
                    if v == 0 {
                        v = 0xffff;
                    }
                    self.buf[udp + 6..udp + 8].copy_from_slice(&v.to_be_bytes());
                }
            }
            self.dns_mapped += 1;
        }
        Ok(())
    }

    /// The map's view of an address (for tests and reports).
    pub fn map_address(&mut self, a: std::net::IpAddr) -> Result<std::net::IpAddr, ToolError> {
        self.map.map(a)
    }

    fn report(&self, counts: RunCounts) -> AnonymizeReport {
        AnonymizeReport {
            counts,
            rewrite: self.rewriter.stats(),
            distinct_addresses: self.map.distinct().unwrap_or(0) as u64,
            payload_cut_packets: self.cut_packets,
            payload_cut_bytes: self.cut_bytes,
            dns_addresses_mapped: self.dns_mapped,
            dns_addresses_left: self.dns_left,
        }
    }
}

/// Anonymizes `input` into `output`; see the module documentation.
pub fn anonymize_file(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    cfg: &AnonymizeConfig,
) -> Result<AnonymizeReport, ToolError> {
    let input = input.as_ref();
    let mut anon = Anonymizer::new(cfg)?;
    let mut reader = CaptureReader::open(input)?;
    let mut bar = Bar::for_file(cfg.progress, input, reader.format().gzip, "anonymize");
    let mut out = Output::new(output);
    let mut read = 0u64;
    let result: Result<(), ToolError> = (|| {
        loop {
            let position = reader.position();
            let Some(p) = reader.next_packet()? else {
                break;
            };
            read += 1;
            if read.is_multiple_of(TICK_EVERY) {
                bar.tick(position, out.counts.written);
            }
            let (ts, link, orig) = (p.ts_ns, p.link_type, p.orig_len);
            let bytes = anon.packet(link, p.data)?;
            out.write(ts, link, bytes, orig)?;
        }
        Ok(())
    })();
    bar.finish();
    result?;
    let fallback = reader
        .interfaces()
        .first()
        .map_or(LinkType::ETHERNET, |i| i.link_type);
    let counts = RunCounts {
        read,
        ..out.finish(fallback)?
    };
    Ok(anon.report(counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DNS answer in UDP/IPv4 whose A record sits at an odd offset, the message of odd length.
    fn dns_answer() -> Vec<u8> {
        use flowbundle_decode::wire::{ip_proto, ipv4, udp};
        let mut m = vec![0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0];
        m.extend_from_slice(b"\x03abc\x03com\x00\x00\x01\x00\x01");
        m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 93, 184, 216, 34]);
        let (s, d) = (
            std::net::Ipv4Addr::new(192, 0, 2, 53),
            std::net::Ipv4Addr::new(192, 0, 2, 7),
        );
        let u = udp::Repr {
            src_port: 53,
            dst_port: 40000,
            payload: &m,
        };
        let ip = ipv4::Repr {
            src: s,
            dst: d,
            protocol: ip_proto::UDP,
            payload_len: u.buffer_len(),
            ttl: 64,
            ident: 7,
            dscp: 0,
            ecn: 0,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
        };
        let mut p = vec![0u8; 20 + u.buffer_len()];
        ip.emit(&mut p).unwrap();
        u.emit(&mut p[20..], s.into(), d.into()).unwrap();
        p
    }

    #[test]
    fn dns_answer_addresses_follow_the_header_mapping_with_valid_checksums() {
        use flowbundle_decode::wire::{ipv4, udp};
        let p = dns_answer();
        let rdata = p.len() - 4;
        assert_eq!(rdata % 2, 1, "the record is at an odd offset");
        for dns in [false, true] {
            let mut anon = Anonymizer::new(&AnonymizeConfig {
                dns,
                ..AnonymizeConfig::new(Method::Sn1)
            })
            .unwrap();
            let out = anon.packet(LinkType::RAW, &p).unwrap().to_vec();
            let ip = ipv4::Packet::new_checked(&out[..]).unwrap();
            assert!(ip.verify_checksum());
            let u = udp::Packet::new_checked(&out[20..]).unwrap();
            assert!(
                u.verify_checksum(ip.src().into(), ip.dst().into()),
                "dns: {dns}"
            );
            let original = std::net::IpAddr::from([93, 184, 216, 34]);
            let report = anon.report(RunCounts::default());
            if dns {
                let mapped = anon.map_address(original).unwrap();
                let std::net::IpAddr::V4(m) = mapped else {
                    panic!("{mapped}")
                };
                assert_eq!(&out[rdata..], &m.octets());
                assert_ne!(mapped, original);
                assert_eq!(
                    (report.dns_addresses_mapped, report.dns_addresses_left),
                    (1, 0)
                );
            } else {
                assert_eq!(&out[rdata..], &[93, 184, 216, 34]);
                assert_eq!(
                    (report.dns_addresses_mapped, report.dns_addresses_left),
                    (0, 1)
                );
            }
        }
    }

    #[test]
    fn arguments() {
        assert_eq!("SN2".parse::<Method>(), Ok(Method::Sn2));
        assert!("sn4".parse::<Method>().is_err());
        assert_eq!(
            "truncate:64".parse::<PayloadMode>(),
            Ok(PayloadMode::Truncate(64))
        );
        assert!("truncate:".parse::<PayloadMode>().is_err());
        assert!("cut".parse::<PayloadMode>().is_err());
        let mut cfg = AnonymizeConfig::new(Method::Prefix);
        assert!(
            Anonymizer::new(&cfg)
                .unwrap_err()
                .to_string()
                .contains("--key")
        );
        cfg.key = Some("secret".into());
        assert!(Anonymizer::new(&cfg).is_ok());
        cfg.method = Method::Sn1;
        assert!(Anonymizer::new(&cfg).is_err());
        let hex =
            "15221d8d33a4cf80130a5b1649907d10d8988f83797965276257 4c2d2a842202".replace(' ', "");
        assert_eq!(key_bytes(&hex)[..4], [21, 34, 29, 141]);
    }
}
