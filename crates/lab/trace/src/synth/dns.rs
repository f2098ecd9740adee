//! DNS queries and answers (RFC 1035): a recursive query for an A, AAAA or HTTPS record and the resolver's answer
//! (addresses with a name pointer, or NXDOMAIN).

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Encodes a dotted name as labels.
fn name(n: &str, out: &mut Vec<u8>) {
    for label in n.split('.').filter(|l| !l.is_empty()) {
        let l = &label.as_bytes()[..label.len().min(63)];
        out.push(l.len() as u8);
        out.extend_from_slice(l);
    }
    out.push(0);
}

/// Query type of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Qtype {
    A = 1,
    Aaaa = 28,
    Https = 65,
}

/// A recursive query.
pub(crate) fn query(id: u16, qname: &str, qtype: Qtype) -> Vec<u8> {
    let mut m = Vec::with_capacity(64);
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    name(qname, &mut m);
    m.extend_from_slice(&(qtype as u16).to_be_bytes());
    m.extend_from_slice(&[0, 1]);
    m
}

/// The answer to [`query`]: 1 to 3 records for A/AAAA, NXDOMAIN sometimes, an empty NOERROR for HTTPS.
pub(crate) fn answer(rng: &mut ChaCha8Rng, id: u16, qname: &str, qtype: Qtype) -> Vec<u8> {
    let nx = rng.random_ratio(1, 20);
    let count = match (nx, qtype) {
        (true, _) | (_, Qtype::Https) => 0,
        _ => rng.random_range(1..=3u16),
    };
    let mut m = Vec::with_capacity(128);
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x81, if nx { 0x83 } else { 0x80 }, 0, 1]);
    m.extend_from_slice(&count.to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0]);
    name(qname, &mut m);
    m.extend_from_slice(&(qtype as u16).to_be_bytes());
    m.extend_from_slice(&[0, 1]);
    let ttl: u32 = rng.random_range(30..3600);
    for _ in 0..count {
        m.extend_from_slice(&[0xc0, 0x0c]);
        m.extend_from_slice(&(qtype as u16).to_be_bytes());
        m.extend_from_slice(&[0, 1]);
        m.extend_from_slice(&ttl.to_be_bytes());
        if qtype == Qtype::Aaaa {
            m.extend_from_slice(&16u16.to_be_bytes());
            m.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
            let tail: [u8; 12] = rng.random();
            m.extend_from_slice(&tail);
        } else {
            m.extend_from_slice(&4u16.to_be_bytes());
            // TEST-NET-3 addresses: never real hosts.
            m.extend_from_slice(&[203, 0, 113, rng.random()]);
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn messages_parse_with_the_engine_parser() {
        use flowbundle_protocols::dns;
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let q = query(0x1234, "www.example.com", Qtype::A);
        let a = answer(&mut rng, 0x1234, "www.example.com", Qtype::A);
        for m in [&q, &a] {
            let parsed = dns::Message::parse(m, 64).expect("parses");
            assert_eq!(parsed.id, 0x1234);
        }
    }
}
