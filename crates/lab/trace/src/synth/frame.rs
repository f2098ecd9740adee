//! Writing Ethernet frames: Ethernet II, IPv4 (DF, incrementing identification, header checksum) or IPv6, and TCP
//! or UDP with the checksum over the pseudo-header. The payload is written straight into the frame by the caller's
//! closure and summed once, so a full-size segment costs one copy and one pass of the checksum.

use std::net::IpAddr;

use flowbundle_decode::wire::{checksum, ip_proto};

use super::apps::Side;

/// One end of a conversation on the wire.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Endpoint {
    pub mac: [u8; 6],
    pub ip: IpAddr,
    pub port: u16,
    pub ttl: u8,
}

/// Both ends and the per-direction IP identification counters.
#[derive(Debug, Clone)]
pub(crate) struct Wire {
    pub ends: [Endpoint; 2],
    pub ip_id: [u16; 2],
    pub flow_label: u32,
}

/// The transport header to write.
#[derive(Debug, Clone, Copy)]
pub(crate) enum L4 {
    Tcp {
        seq: u32,
        ack: u32,
        flags: u16,
        window: u16,
        /// SYN options: MSS, NOP, window scale 7, NOP, NOP, SACK permitted (12 bytes).
        syn_mss: Option<u16>,
    },
    Udp,
}

impl Wire {
    /// Writes a frame from `from` carrying `payload_len` bytes that `fill` writes; `buf` is replaced.
    pub(crate) fn frame(
        &mut self,
        buf: &mut Vec<u8>,
        from: Side,
        l4: L4,
        payload_len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) {
        let (s, d) = (self.ends[from.index()], self.ends[from.other().index()]);
        let v6 = s.ip.is_ipv6();
        let ip_len = if v6 { 40 } else { 20 };
        let (l4_len, proto) = match l4 {
            L4::Tcp { syn_mss, .. } => (if syn_mss.is_some() { 32 } else { 20 }, ip_proto::TCP),
            L4::Udp => (8, ip_proto::UDP),
        };
        let total = 14 + ip_len + l4_len + payload_len;
        buf.clear();
        buf.resize(total, 0);
        buf[0..6].copy_from_slice(&d.mac);
        buf[6..12].copy_from_slice(&s.mac);
        let l4_at = 14 + ip_len;
        let seg_len = l4_len + payload_len;
        match (s.ip, d.ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                buf[12..14].copy_from_slice(&[0x08, 0x00]);
                let h = &mut buf[14..34];
                h[0] = 0x45;
                h[2..4].copy_from_slice(&((20 + seg_len) as u16).to_be_bytes());
                let id = &mut self.ip_id[from.index()];
                h[4..6].copy_from_slice(&id.to_be_bytes());
                *id = id.wrapping_add(1);
                h[6] = 0x40;
                h[8] = s.ttl;
                h[9] = proto;
                h[12..16].copy_from_slice(&a.octets());
                h[16..20].copy_from_slice(&b.octets());
                let c = checksum::checksum(h);
                h[10..12].copy_from_slice(&c.to_be_bytes());
            }
            (IpAddr::V6(a), IpAddr::V6(b)) => {
                buf[12..14].copy_from_slice(&[0x86, 0xdd]);
                let h = &mut buf[14..54];
                let first = (6u32 << 28) | (self.flow_label & 0xf_ffff);
                h[0..4].copy_from_slice(&first.to_be_bytes());
                h[4..6].copy_from_slice(&(seg_len as u16).to_be_bytes());
                h[6] = proto;
                h[7] = s.ttl;
                h[8..24].copy_from_slice(&a.octets());
                h[24..40].copy_from_slice(&b.octets());
            }
            // Endpoints are always built of one family.
            _ => {}
        }
        fill(&mut buf[l4_at + l4_len..]);
        let t = &mut buf[l4_at..];
        t[0..2].copy_from_slice(&s.port.to_be_bytes());
        t[2..4].copy_from_slice(&d.port.to_be_bytes());
        let csum_at = match l4 {
            L4::Tcp {
                seq,
                ack,
                flags,
                window,
                syn_mss,
            } => {
                t[4..8].copy_from_slice(&seq.to_be_bytes());
                t[8..12].copy_from_slice(&ack.to_be_bytes());
                let off = ((l4_len / 4) as u16) << 12;
                t[12..14].copy_from_slice(&(off | flags).to_be_bytes());
                t[14..16].copy_from_slice(&window.to_be_bytes());
                if let Some(m) = syn_mss {
                    let m = m.to_be_bytes();
                    t[20..32].copy_from_slice(&[2, 4, m[0], m[1], 1, 3, 3, 7, 1, 1, 4, 2]);
                }
                16
            }
            L4::Udp => {
                t[4..6].copy_from_slice(&(seg_len as u16).to_be_bytes());
                6
            }
        };
        let mut sum = checksum::pseudo_header(s.ip, d.ip, proto, seg_len as u32);
        sum += checksum::sum(t);
        let mut c = checksum::finish(sum);
        if proto == ip_proto::UDP && c == 0 {
            c = 0xffff;
        }
        t[csum_at..csum_at + 2].copy_from_slice(&c.to_be_bytes());
    }
}
