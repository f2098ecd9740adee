//! MQTT 3.1, 3.1.1 and 5 (OASIS): nDPI's `MQTT`.
//!
//! A client opens with CONNECT: fixed header `0x10`, a variable-length "remaining length" (1..=4 bytes, 7 bits
//! each), then the protocol name as a length-prefixed string (`MQTT` with level 4/5, or `MQIsdp` with level 3)
//! and the connect flags (bit 0 reserved, must be 0). That is certain from the first payload.
//!
//! Captures that start after the CONNECT (a long-lived session, or a pickup mid-stream) are recognised when a
//! direction's stream prefix is a chain of at least two well-formed control packets (valid type/flags pairs,
//! lengths that end exactly at the end of what arrived), e.g. PINGREQ then PUBACK, or when both directions together
//! show two: the broker's CONNACK, then the client's first PUBLISH, whose end may lie beyond what arrived (a large
//! message split over segments) once its topic name has arrived whole.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Decodes MQTT's remaining-length varint at the start of `d`: `(value, bytes used)`.
pub fn remaining_length(d: &[u8]) -> Option<(usize, usize)> {
    let mut v = 0usize;
    for i in 0..4 {
        let b = *d.get(i)?;
        v |= usize::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// Judges a CONNECT at the start of `d`.
fn connect(d: &[u8]) -> Probe {
    match d.first() {
        None => return Probe::Unsure,
        Some(0x10) => {}
        Some(_) => return Probe::NotForUs,
    }
    let Some((len, n)) = remaining_length(&d[1..]) else {
        return if d.len() < 5 {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    };
    let body = &d[1 + n..];
    if len < 10 {
        return Probe::NotForUs;
    }
    let name_ok = |name: &[u8], levels: &[u8]| -> Option<bool> {
        let need = 2 + name.len() + 2;
        if body.len() < need {
            let have = body.len().min(need);
            let mut want = vec![0u8, name.len() as u8];
            want.extend_from_slice(name);
            return if want.starts_with(&body[..have.min(want.len())]) {
                None
            } else {
                Some(false)
            };
        }
        Some(
            body[0] == 0
                && usize::from(body[1]) == name.len()
                && &body[2..2 + name.len()] == name
                && levels.contains(&body[2 + name.len()])
                && body[3 + name.len()] & 1 == 0,
        )
    };
    match (name_ok(b"MQTT", &[4, 5]), name_ok(b"MQIsdp", &[3])) {
        (Some(true), _) | (_, Some(true)) => Probe::Certain,
        (None, _) | (_, None) => Probe::Unsure,
        _ => Probe::NotForUs,
    }
}

/// Detector for MQTT over TCP.
pub struct MqttDetector;

impl Detector for MqttDetector {
    fn proto(&self) -> AppProto {
        AppProto::Mqtt
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        // Content, not direction: without a SYN the engine may take the broker for the client.
        let p = ctx.prefix;
        match p.first() {
            Some(0x10) => connect(p),
            None => Probe::Unsure,
            Some(_) => match chain(p) {
                Some(c) if !c.partial && c.complete >= 2 => Probe::Certain,
                // Picked up mid-stream from either side: this direction's packets together with the other
                // direction's (a CONNACK, then the client's first PUBLISH).
                Some(c)
                    if c.evidence() >= 1
                        && c.evidence() + chain(ctx.peer).map_or(0, |p| p.evidence()) >= 2 =>
                {
                    Probe::Certain
                }
                Some(_) if ctx.dir_index < 3 => Probe::Unsure,
                _ => Probe::NotForUs,
            },
        }
    }
}

/// How a stream prefix reads as MQTT control packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Chain {
    /// Well-formed packets that end within the prefix.
    complete: usize,
    /// The prefix ends inside one more packet whose start is well-formed.
    partial: bool,
    /// That unfinished packet is a PUBLISH whose whole topic name arrived and checks out (evidence as good as a
    /// complete packet: a random stream almost never has a short UTF-8 topic at the right offset).
    partial_publish: bool,
}

impl Chain {
    /// Packets that count as evidence.
    fn evidence(&self) -> usize {
        self.complete + usize::from(self.partial_publish)
    }
}

/// Reads `d` as a chain of MQTT control packets, or `None` if it is not one. The last packet may be unfinished
/// (a segment boundary or the prefix cap cuts it), provided what arrived of it is well-formed.
fn chain(d: &[u8]) -> Option<Chain> {
    let mut i = 0;
    let mut c = Chain::default();
    while i < d.len() {
        let b0 = *d.get(i)?;
        let (ty, flags) = (b0 >> 4, b0 & 0x0f);
        let flags_ok = match ty {
            3 => flags & 0x06 != 0x06,
            6 | 8 | 10 => flags == 2,
            1..=14 => flags == 0,
            15 => flags == 0,
            _ => false,
        };
        if !flags_ok {
            return None;
        }
        let rest = d.get(i + 1..)?;
        let Some((len, used)) = remaining_length(rest) else {
            // Unfinished when every length byte that arrived says "more follows" (at most 3 of them).
            if rest.len() < 4 && rest.iter().all(|&b| b & 0x80 != 0) {
                c.partial = true;
                return Some(c);
            }
            return None;
        };
        let whole = d.get(i + 1 + used..i + 1 + used + len);
        if ty == 3 {
            // PUBLISH: a topic name (2-byte length, UTF-8 without NUL) must fit in the packet. This is what tells
            // a PUBLISH from a BER SEQUENCE (LDAP's `0x30 len 0x02 ...`).
            let var = d.get(i + 1 + used..)?;
            match crate::scan::be16(var, 0).map(usize::from) {
                Some(tlen) => match var.get(2..2 + tlen) {
                    Some(topic) => {
                        if tlen == 0
                            || tlen + 2 > len
                            || topic.contains(&0)
                            || std::str::from_utf8(topic).is_err()
                        {
                            return None;
                        }
                        if whole.is_none() {
                            c.partial = true;
                            c.partial_publish = true;
                            return Some(c);
                        }
                    }
                    None if whole.is_none() && tlen > 0 && tlen + 2 <= len => {
                        c.partial = true;
                        return Some(c);
                    }
                    None => return None,
                },
                None if whole.is_none() => {
                    c.partial = true;
                    return Some(c);
                }
                None => return None,
            }
        }
        // Packets without a payload have fixed remaining lengths.
        let len_ok = match ty {
            12..=14 => len == 0 || (ty == 14 && len <= 64),
            4..=7 | 11 => len >= 2,
            2 => (2..=64).contains(&len),
            _ => len >= 2,
        };
        if !len_ok {
            return None;
        }
        if whole.is_none() {
            c.partial = true;
            return Some(c);
        }
        i += 1 + used + len;
        c.complete += 1;
    }
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    #[test]
    fn connect_packets() {
        // mqtt.pcap: CONNECT, MQTT 3.1.1, clean session, keepalive 60, client id "mosq-...".
        let c = b"\x10\x1c\x00\x04MQTT\x04\x02\x00\x3c\x00\x10mosq-abcdefghijk";
        assert_eq!(
            MqttDetector.probe(&ctx_tcp(Direction::ToServer, c)),
            Probe::Certain
        );
        assert_eq!(
            MqttDetector.probe(&ctx_tcp(Direction::ToServer, &c[..6])),
            Probe::Unsure
        );
        let old = b"\x10\x1e\x00\x06MQIsdp\x03\x02\x00\x3c\x00\x10mosq-abcdefghijk";
        assert_eq!(
            MqttDetector.probe(&ctx_tcp(Direction::ToServer, old)),
            Probe::Certain
        );
        assert_eq!(
            MqttDetector.probe(&ctx_tcp(
                Direction::ToServer,
                b"\x10\x1c\x00\x04HTTP\x04\x02"
            )),
            Probe::NotForUs
        );
        assert_eq!(
            MqttDetector.probe(&ctx_tcp(Direction::ToServer, b"GET / HTTP/1.1\r\n")),
            Probe::NotForUs
        );
        assert_eq!(remaining_length(&[0xff, 0xff, 0xff, 0xff, 0x01]), None);
        // The broker's side of a session picked up late (coap_mqtt.pcap): PINGRESP, then a PUBLISH QoS 1.
        let mut late = vec![
            0xd0, 0x00, 0x32, 0x08, 0x00, 0x02, b'a', b'b', 0x00, 0x01, b'h', b'i',
        ];
        assert_eq!(
            MqttDetector.probe(&ctx_tcp(Direction::ToClient, &late)),
            Probe::Certain
        );
        late.push(0x00);
        assert_eq!(
            MqttDetector.probe(&ctx_tcp(Direction::ToClient, &late)),
            Probe::NotForUs
        );
        assert_eq!(
            MqttDetector.probe(&ctx_tcp(Direction::ToClient, &late[..2])),
            Probe::Unsure
        );
        assert_eq!(remaining_length(&[0xc1, 0x02]), Some((321, 2)));
    }

    #[test]
    fn a_pickup_after_the_connect_is_found_from_both_directions() {
        // The broker's v5 CONNACK with properties, split after its first byte, then the client's PUBLISH of a
        // 35,767-byte message whose first segment carries the topic.
        let connack = {
            let mut v = vec![
                0x20, 0x0c, 0x00, 0x00, 0x09, 0x22, 0x00, 0x0a, 0x12, 0x00, 0x03,
            ];
            v.extend_from_slice(b"abc");
            v
        };
        assert_eq!(
            MqttDetector.probe(&ctx_tcp(Direction::ToClient, &connack[..1])),
            Probe::Unsure
        );
        assert_eq!(
            MqttDetector.probe(&ctx_tcp(Direction::ToClient, &connack)),
            Probe::Unsure
        );
        let mut publish = vec![0x30, 0xb7, 0x97, 0x02, 0x00, 0x06];
        publish.extend_from_slice(b"topicX");
        publish.extend_from_slice(&[0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]);
        let mut c = ctx_tcp(Direction::ToServer, &publish);
        assert_eq!(MqttDetector.probe(&c), Probe::Unsure, "alone");
        c.peer = &connack;
        assert_eq!(MqttDetector.probe(&c), Probe::Certain, "with the CONNACK");
        // A topic that is not text, or a first byte that is no PUBLISH, is not evidence.
        let mut bad = publish.clone();
        bad[7] = 0x00;
        let mut c = ctx_tcp(Direction::ToServer, &bad);
        c.peer = &connack;
        assert_eq!(MqttDetector.probe(&c), Probe::NotForUs);
        let mut c = ctx_tcp(Direction::ToServer, b"\x16\x03\x01\x02\x00\x01\x00");
        c.peer = &connack;
        assert_eq!(MqttDetector.probe(&c), Probe::NotForUs);
    }
}
