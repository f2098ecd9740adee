//! DCE/RPC (MS-RPCE), connection-oriented over TCP and connectionless over UDP: nDPI's `DCERPC`.
//!
//! * TCP: version 5, minor 0 or 1, a PDU type 0..=19, the data representation (`0x10` little-endian or `0x00`,
//!   ASCII, IEEE) and a fragment length that equals the bytes that arrived.
//! * UDP: version 4, PDU type 0..=10, the same data representation, and the 80-byte header's fragment length
//!   accounting for the rest of the datagram.
//!
//! On TCP the parser also follows the calls ([`pdu`]): each request's and response's stub, with the interface its
//! context was bound to and its operation number, goes to the rules through [`EventSink::dcerpc`], and each
//! transaction becomes an EVE `dcerpc` record ([`log`]); on UDP each request/response pair does.

pub mod interfaces;
pub mod log;
pub mod pdu;

pub use log::DcerpcEvent;
pub use pdu::{DcerpcCall, Interface};

use crate::scan::{be16, le16};
use crate::{
    AppEvent, AppProto, Detector, Direction, EventSink, Limits, Parser, Probe, ProbeCtx, Transport,
};

/// The PROFINET IO interfaces' UUIDs (IEC 61158-6-10: device, controller, supervisor, parameter server):
/// `DEA0000n-6C97-11D1-8271-00A02442DF7D`, n = 1..=4; the first field, then the rest as it is on the wire.
const PNIO_FIRST: std::ops::RangeInclusive<u32> = 0xdea0_0001..=0xdea0_0004;
const PNIO_REST: [u8; 12] = [
    0x6c, 0x97, 0x11, 0xd1, 0x82, 0x71, 0x00, 0xa0, 0x24, 0x42, 0xdf, 0x7d,
];

/// Whether the UUID at `d[at..at + 16]`, in the byte order `drep` gives, is a PROFINET IO interface.
fn pnio_interface(d: &[u8], at: usize, drep: u8) -> bool {
    let Some(u) = d.get(at..at + 16) else {
        return false;
    };
    let little = drep & 0x10 != 0;
    let first = u32::from_be_bytes([u[0], u[1], u[2], u[3]]);
    let first = if little { first.swap_bytes() } else { first };
    let (mid, hi) = if little {
        ([u[5], u[4]], [u[7], u[6]])
    } else {
        ([u[4], u[5]], [u[6], u[7]])
    };
    PNIO_FIRST.contains(&first)
        && mid == PNIO_REST[..2]
        && hi == PNIO_REST[2..4]
        && u[8..] == PNIO_REST[4..]
}

/// The service a PDU's interface names: a connectionless PDU's interface UUID (header offset 24), or the first
/// presentation context's abstract syntax in a connection-oriented bind or alter-context (offset 32).
fn service(transport: Transport, d: &[u8]) -> Option<&'static str> {
    let drep = *d.get(4)?;
    let pnio = match transport {
        Transport::Udp => d.first() == Some(&4) && pnio_interface(d, 24, drep),
        Transport::Tcp => {
            d.first() == Some(&5)
                && matches!(d.get(2), Some(11 | 14))
                && pnio_interface(d, 32, drep)
        }
        _ => false,
    };
    pnio.then_some("PROFINET_IO")
}

/// Names the service of a DCE/RPC flow from its interface: PROFINET IO's are nDPI's `DCERPC.PROFINET_IO`.
struct InterfaceParser {
    transport: Transport,
    named: bool,
    /// The calls of a connection-oriented (TCP) flow.
    co: Option<Box<pdu::CoState>>,
    /// The transactions of a connectionless (UDP) flow.
    cl: Option<Box<log::UdpTxLog>>,
    /// Records name their interfaces ([`Limits::dcerpc_names`]).
    names: bool,
}

/// Hands a record over, its interfaces named when `names` asks for it.
fn record(names: bool, mut e: DcerpcEvent, out: &mut dyn EventSink) {
    if names {
        e.name_interfaces();
    }
    out.event(AppEvent::Dcerpc(e));
}

impl Parser for InterfaceParser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        if !self.named
            && let Some(name) = service(self.transport, data)
        {
            self.named = true;
            out.application(name);
        }
        let names = self.names;
        if let Some(co) = self.co.as_deref_mut() {
            co.feed(dir == Direction::ToServer, data, &mut |call| {
                out.dcerpc(call)
            });
            if let Some(r) = co.records.as_deref_mut() {
                for e in r.take_done() {
                    record(names, e, out);
                }
            }
        }
        if let Some(cl) = self.cl.as_deref_mut() {
            cl.datagram(data);
            for e in cl.take_done() {
                record(names, e, out);
            }
        }
    }

    fn gap(&mut self, dir: Direction, _len: u64) {
        if let Some(co) = self.co.as_deref_mut() {
            co.gap(dir == Direction::ToServer);
        }
    }

    fn finish(&mut self, out: &mut dyn EventSink) {
        let names = self.names;
        if let Some(r) = self
            .co
            .as_deref_mut()
            .and_then(|co| co.records.as_deref_mut())
        {
            for e in r.finish() {
                record(names, e, out);
            }
        }
        if let Some(cl) = self.cl.as_deref_mut() {
            for e in cl.finish() {
                record(names, e, out);
            }
        }
    }

    fn stats(&self) -> crate::ParserStats {
        let mut s = crate::ParserStats::default();
        if let Some(co) = self.co.as_deref() {
            s.bytes_cut = co.cut_bytes;
            s.malformed = co.malformed;
        }
        s
    }
}

/// Detector for DCERPC.
pub struct DcerpcDetector;

impl Detector for DcerpcDetector {
    fn proto(&self) -> AppProto {
        AppProto::Dcerpc
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let drep_ok = |i: usize| {
            d.get(i).is_some_and(|&b| b & 0xee == 0)
                && d.get(i + 1) == Some(&0)
                && d.get(i + 2) == Some(&0)
        };
        let ok = match ctx.transport {
            Transport::Icmp | Transport::Other(_) => return Probe::NotForUs,
            Transport::Tcp => {
                d.len() >= 16
                    && d[0] == 5
                    && d[1] <= 1
                    && d[2] <= 19
                    && drep_ok(4)
                    && (if d[4] & 0x10 != 0 {
                        le16(d, 8)
                    } else {
                        be16(d, 8)
                    })
                    .is_some_and(|l| usize::from(l) == d.len())
            }
            Transport::Udp => {
                d.len() >= 80
                    && d[0] == 4
                    && d[1] <= 10
                    && drep_ok(4)
                    && (if d[4] & 0x10 != 0 {
                        le16(d, 74)
                    } else {
                        be16(d, 74)
                    })
                    .is_some_and(|l| usize::from(l) + 80 == d.len())
            }
        };
        if ok { Probe::Certain } else { Probe::NotForUs }
    }
    fn parser(&self, transport: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(InterfaceParser {
            transport,
            named: false,
            co: (transport == Transport::Tcp).then(|| Box::new(pdu::CoState::with_records())),
            cl: (transport == Transport::Udp).then(Box::default),
            names: limits.dcerpc_names,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connectionless request to the PROFINET IO device interface (little-endian), as a controller sends it.
    #[test]
    fn profinet_io_interface() {
        let mut d = vec![4, 0, 0x20, 0, 0x10, 0, 0, 0];
        d.extend_from_slice(&[0; 16]); // object UUID
        d.extend_from_slice(&[0x01, 0x00, 0xa0, 0xde, 0x97, 0x6c, 0xd1, 0x11]);
        d.extend_from_slice(&PNIO_REST[4..]);
        d.extend_from_slice(&[0; 40]);
        assert_eq!(service(Transport::Udp, &d), Some("PROFINET_IO"));
        let mut big = d.clone();
        big[4] = 0;
        assert_eq!(
            service(Transport::Udp, &big),
            None,
            "read in the wrong byte order"
        );
        big[24..32].copy_from_slice(&[0xde, 0xa0, 0x00, 0x01, 0x6c, 0x97, 0x11, 0xd1]);
        assert_eq!(service(Transport::Udp, &big), Some("PROFINET_IO"));
        let mut other = d.clone();
        other[24] = 0x05; // DEA00005: not one of the four
        assert_eq!(service(Transport::Udp, &other), None);
        assert_eq!(
            service(Transport::Tcp, &d),
            None,
            "a version 4 header on TCP"
        );
    }

    #[allow(non_upper_case_globals)]
    const Det: DcerpcDetector = DcerpcDetector;

    /// With [`Limits::dcerpc_names`] the TCP parser's records name their interfaces (the bind's by service, the
    /// request's also by operation: svcctl 0x10 is OpenServiceW); without it they keep Suricata 8's layout.
    #[test]
    fn records_name_interfaces_when_asked() {
        use pdu::tests::{SVCCTL, bind, bind_ack, request, response};
        for names in [false, true] {
            let limits = Limits {
                dcerpc_names: names,
                ..Limits::default()
            };
            let mut p = Det.parser(Transport::Tcp, &limits).unwrap();
            let events = crate::testkit::run_parser(
                p.as_mut(),
                &[
                    (Direction::ToServer, &bind(1, 0, SVCCTL, 2)),
                    (Direction::ToClient, &bind_ack(1, 0)),
                    (Direction::ToServer, &request(2, 3, 0, 0x10, b"stub")),
                    (Direction::ToClient, &response(2, 3, b"ok")),
                ],
            );
            let got: Vec<_> = events
                .iter()
                .filter_map(|e| match e {
                    AppEvent::Dcerpc(d) => {
                        let i = d.interfaces.first()?;
                        Some((d.request, i.service, i.procedure))
                    }
                    _ => None,
                })
                .collect();
            let want = if names {
                vec![
                    ("BIND", Some("svcctl"), None),
                    ("REQUEST", Some("svcctl"), Some("OpenServiceW")),
                ]
            } else {
                vec![("BIND", None, None), ("REQUEST", None, None)]
            };
            assert_eq!(got, want);
        }
    }

    #[test]
    fn recognises_real_shapes() {
        let mut bind = vec![
            0x05, 0x00, 0x0b, 0x03, 0x10, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00, 0x01, 0, 0, 0,
        ];
        bind.extend_from_slice(&[0u8; 56]);
        assert_eq!(
            Det.probe(&crate::testkit::ctx_tcp(Direction::ToServer, &bind)),
            Probe::Certain
        );
        let mut cl = vec![0x04, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00];
        cl.extend_from_slice(&[0u8; 66]);
        cl.extend_from_slice(&[0x00, 0x04, 0, 0, 0, 0]);
        cl.extend_from_slice(&[1, 2, 3, 4]);
        assert_eq!(
            Det.probe(&crate::testkit::ctx_udp(Direction::ToServer, &cl, &[])),
            Probe::Certain
        );
        assert_eq!(
            Det.probe(&crate::testkit::ctx_udp(
                Direction::ToServer,
                &cl[..83],
                &[]
            )),
            Probe::NotForUs
        );
    }
}
