//! Property tests for the rewriting tools' parsers: the per-packet address rewriter and link-type converter on
//! arbitrary bytes (hostile captures reach both), and the argument parsers on arbitrary strings. None may panic;
//! the rewriter keeps a packet's length, the converter reports its length change exactly, and a printed rate
//! parses back to itself.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use flowbundle_ingest::LinkType;
use flowbundle_trace::rewrite::link::to_ethernet;
use flowbundle_trace::rewrite::{
    AddressMap, AddressRewriter, PacketRange, Rate, TimeRange, ToolError,
};
use proptest::prelude::*;

/// Flips every address bit: injective and family-preserving, so every rewrite path changes bytes.
struct Invert;

impl AddressMap for Invert {
    fn map(&mut self, a: IpAddr) -> Result<IpAddr, ToolError> {
        Ok(match a {
            IpAddr::V4(v) => IpAddr::V4(Ipv4Addr::from(!u32::from(v))),
            IpAddr::V6(v) => IpAddr::V6(Ipv6Addr::from(!u128::from(v))),
        })
    }
}

const LINKS: [LinkType; 8] = [
    LinkType::ETHERNET,
    LinkType::RAW,
    LinkType::IPV4,
    LinkType::IPV6,
    LinkType::NULL,
    LinkType::LOOP,
    LinkType::LINUX_SLL,
    LinkType::LINUX_SLL2,
];

/// An IPv4 or IPv6 header start followed by anything, so that arbitrary bytes get past the version check often.
fn ipish() -> impl Strategy<Value = Vec<u8>> {
    (
        prop_oneof![
            Just(0x45u8),
            Just(0x46),
            Just(0x4f),
            Just(0x60),
            any::<u8>()
        ],
        proptest::collection::vec(any::<u8>(), 0..200),
    )
        .prop_map(|(first, rest)| {
            let mut v = vec![first];
            v.extend(rest);
            v
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_rewriter_survives_any_bytes(
        link in 0usize..LINKS.len(),
        eth_prefix in any::<bool>(),
        tunnels in any::<bool>(),
        body in ipish(),
    ) {
        let link = LINKS[link];
        let mut pkt = Vec::new();
        if eth_prefix || link == LinkType::ETHERNET {
            pkt.extend_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2]);
            pkt.extend_from_slice(if body[0] >> 4 == 6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
        }
        pkt.extend_from_slice(&body);
        let len = pkt.len();
        let mut rw = AddressRewriter::new(tunnels);
        let r = rw.rewrite(link, &mut pkt, &mut Invert);
        prop_assert!(r.is_ok());
        prop_assert_eq!(pkt.len(), len);
    }

    #[test]
    fn link_conversion_reports_its_length_change(link in 0usize..LINKS.len(), data in ipish()) {
        let mut out = Vec::new();
        if let Some(delta) = to_ethernet(LINKS[link], &data, &mut out) {
            prop_assert_eq!(out.len() as i64, data.len() as i64 + delta);
        }
    }

    #[test]
    fn argument_parsers_refuse_without_panicking(s in ".{0,40}") {
        let _ = s.parse::<Rate>();
        let _ = s.parse::<PacketRange>();
        let _ = s.parse::<TimeRange>();
    }

    #[test]
    fn argument_parsers_on_near_misses(
        a in "[0-9.@:TZ+-]{0,24}",
        op in prop_oneof![Just(".."), Just("..="), Just(""), Just("...")],
        b in "[0-9.@:TZ+-]{0,24}",
        unit in prop_oneof![Just(""), Just("Gbit/s"), Just("MB/s"), Just("kbps"), Just("x"), Just("e999")],
    ) {
        let range = format!("{a}{op}{b}");
        let _ = range.parse::<PacketRange>();
        let _ = range.parse::<TimeRange>();
        if let Ok(r) = format!("{a}{unit}").parse::<Rate>() {
            prop_assert!(r.bps().is_finite() && r.bps() > 0.0);
        }
    }

    #[test]
    fn printed_rates_parse_back(bps in 1e-3f64..1e15) {
        let r = Rate::bits_per_second(bps).unwrap();
        let back: Rate = r.to_string().parse().unwrap();
        prop_assert!((back.bps() - bps).abs() <= bps * 1e-3, "{} -> {}", bps, back.bps());
    }
}
