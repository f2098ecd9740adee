//! Link layers and shims found in suricata-verify captures: Cisco HDLC (`decode-chdlc-01`) and NSH
//! (`decode-nsh-type1`). Every packet must reach its transport header with the addresses tshark shows, as
//! Suricata's decoder counts them (`decoder.chdlc: 17`, `decoder.nsh: 1` in the tests' stats checks).

mod common;

use std::net::IpAddr;

use flowbundle_decode::{DecodeOptions, L4, Outcome, decode};
use flowbundle_ingest::LinkType;

#[test]
fn cisco_hdlc_capture_decodes_to_tcp() {
    let Some(t) = common::load("suricata-verify/decode-chdlc-01/hdlc-http_1tx.pcap") else {
        return;
    };
    let opts = DecodeOptions::default();
    let mut n = 0;
    let mut payload = 0;
    for rec in t.iter() {
        assert_eq!(rec.link_type, LinkType::C_HDLC);
        let d = decode(&rec, &opts);
        assert_eq!(d.outcome, Outcome::Decoded, "packet {n}");
        let ip = d.ip.expect("an IPv4 header");
        let a: IpAddr = "192.168.2.7".parse().unwrap();
        let b: IpAddr = "65.55.116.183".parse().unwrap();
        assert!(
            (ip.src, ip.dst) == (a, b) || (ip.src, ip.dst) == (b, a),
            "packet {n}: {ip:?}"
        );
        assert_eq!(
            d.l3_offset, 4,
            "the IP header follows the 4-byte HDLC header"
        );
        let L4::Tcp(tcp) = d.l4 else {
            panic!("packet {n}: not TCP");
        };
        assert!(tcp.src_port == 80 || tcp.dst_port == 80);
        payload += d.payload.len();
        n += 1;
    }
    // Suricata's stats check for this capture: decoder.chdlc 17, decoder.ipv4 17.
    assert_eq!(n, 17);
    assert!(
        payload > 8000,
        "the HTTP response body (8079 bytes) is payload"
    );
}

#[test]
fn nsh_md_type_1_capture_decodes_to_udp() {
    let Some(t) = common::load("suricata-verify/decode-nsh-type1/input.pcap") else {
        return;
    };
    let recs: Vec<_> = t.iter().collect();
    assert_eq!(recs.len(), 1);
    // NSH is followed with and without tunnel decapsulation: the outer frame has no IP layer.
    for decap in [false, true] {
        let opts = DecodeOptions {
            decap_tunnels: decap,
            ..DecodeOptions::default()
        };
        let d = decode(&recs[0], &opts);
        assert_eq!(d.outcome, Outcome::Decoded);
        let ip = d.ip.expect("the inner IPv4 header");
        assert_eq!(ip.src, "10.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(ip.dst, "10.0.0.2".parse::<IpAddr>().unwrap());
        assert_eq!(
            d.l3_offset,
            14 + 24,
            "Ethernet, then a 24-byte MD type 1 NSH"
        );
        assert_eq!(d.ports(), Some((52377, 52464)));
        assert!(matches!(d.l4, L4::Udp(_)));
        assert_eq!(d.payload, b"data\n\n");
    }
    // The NSH counts towards the encapsulation depth.
    let shallow = DecodeOptions {
        max_depth: 0,
        ..DecodeOptions::default()
    };
    assert_eq!(
        decode(&recs[0], &shallow).outcome.reason(),
        "too_deep",
        "an NSH is one encapsulation layer"
    );
}

#[test]
fn cut_and_unsupported_nsh_are_counted_not_followed() {
    let Some(t) = common::load("suricata-verify/decode-nsh-type1/input.pcap") else {
        return;
    };
    let Some(rec) = t.iter().next() else {
        panic!("one packet");
    };
    let opts = DecodeOptions::default();
    let base = rec.data.to_vec();
    let run = |b: &[u8]| flowbundle_decode::decode_bytes(LinkType::ETHERNET, b, &opts).outcome;
    // Cut inside the context headers.
    assert_eq!(run(&base[..14 + 20]).to_string(), "truncated(nsh)");
    // Version 1.
    let mut b = base.clone();
    b[14] |= 0x40;
    assert_eq!(run(&b).to_string(), "malformed(nsh_header)");
    // Next protocol NSH (nested), and an unknown MD type.
    let mut b = base.clone();
    b[17] = 4;
    assert_eq!(run(&b).to_string(), "unsupported(nsh)");
    let mut b = base.clone();
    b[16] = 0x0f;
    assert_eq!(run(&b).to_string(), "unsupported(nsh)");
}

/// PPP link type (9) in nDPI's captures: `dlt_ppp.pcap` (no address/control bytes, 2-byte protocol, one QUIC
/// datagram) and `BGP_Cisco_hdlc_slarp.pcap` (a PPP link carrying Cisco HDLC frames, as libpcap and tshark read it:
/// 14 BGP segments). Addresses and ports as tshark shows them.
#[test]
fn ppp_link_type_captures_decode() {
    let opts = DecodeOptions::default();
    if let Some(t) = common::load("ndpi/pcap/dlt_ppp.pcap") {
        let recs: Vec<_> = t.iter().collect();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].link_type, LinkType::PPP);
        let d = decode(&recs[0], &opts);
        assert_eq!(d.outcome, Outcome::Decoded);
        assert_eq!(
            d.l3_offset, 2,
            "two bytes of PPP protocol, no address/control"
        );
        let ip = d.ip.expect("IPv4");
        assert_eq!(ip.src, "193.167.0.252".parse::<IpAddr>().unwrap());
        assert_eq!(ip.dst, "193.167.100.100".parse::<IpAddr>().unwrap());
        let L4::Udp(u) = d.l4 else {
            panic!("not UDP: {:?}", d.l4)
        };
        assert_eq!((u.src_port, u.dst_port), (44083, 443));
    }
    if let Some(t) = common::load("ndpi/pcap/BGP_Cisco_hdlc_slarp.pcap") {
        let mut n = 0;
        for rec in t.iter() {
            assert_eq!(rec.link_type, LinkType::PPP);
            let d = decode(&rec, &opts);
            assert_eq!(d.outcome, Outcome::Decoded, "packet {n}");
            assert_eq!(d.l3_offset, 4, "packet {n}: the 4-byte Cisco HDLC header");
            let L4::Tcp(tcp) = d.l4 else {
                panic!("packet {n}: not TCP")
            };
            assert!(tcp.src_port == 179 || tcp.dst_port == 179, "packet {n}");
            n += 1;
        }
        assert_eq!(n, 14);
    }
}

/// CAPWAP data tunnels in nDPI's `capwap.pcap` (a Cisco access point: 802.11 frame control byte-swapped): with
/// decapsulation, the 11 IP packets inside 802.11 data frames on UDP 5247 decode to their inner addresses, as
/// nDPI's ground truth counts them (5 DHCP, 5 ICMPv6, 1 IGMP); 802.11 management frames stay plain UDP.
#[test]
fn capwap_data_frames_decapsulate() {
    use flowbundle_decode::TunnelSet;
    let Some(t) = common::load("ndpi/pcap/capwap.pcap") else {
        return;
    };
    let opts = DecodeOptions {
        decap_tunnels: true,
        ..DecodeOptions::default()
    };
    let (mut inner, mut dhcp, mut outer_5247) = (0, 0, 0);
    for rec in t.iter() {
        let d = decode(&rec, &opts);
        assert!(
            matches!(d.outcome, Outcome::Decoded | Outcome::Unsupported(_)),
            "{:?}",
            d.outcome
        );
        if d.tunnel_kinds.contains(TunnelSet::CAPWAP) {
            inner += 1;
            if let L4::Udp(u) = d.l4
                && (u.src_port, u.dst_port) == (68, 67)
            {
                dhcp += 1;
                let ip = d.ip.expect("inner IPv4");
                assert_eq!(ip.dst, "255.255.255.255".parse::<IpAddr>().unwrap());
            }
        } else if let L4::Udp(u) = d.l4
            && (u.src_port == 5247 || u.dst_port == 5247)
        {
            outer_5247 += 1;
        }
    }
    println!("capwap.pcap: {inner} decapsulated, {dhcp} DHCP, {outer_5247} left as UDP 5247");
    assert_eq!(
        dhcp, 5,
        "nDPI's ground truth: 5 DHCP packets inside the tunnel"
    );
    assert_eq!(inner, 11);
    assert!(
        outer_5247 > 100,
        "management frames stay outer UDP: {outer_5247}"
    );
}
