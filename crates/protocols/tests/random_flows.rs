//! How often the whole registry names a flow of random bytes: the nearest thing to encrypted or unknown traffic on
//! ports nothing in particular listens on. A detector that is certain on random payloads decides from evidence
//! chance supplies (a short magic value, a loose structure, a port), and would misname traffic it has never seen;
//! this test counts, per detector, the flows it claims.
//!
//! Each flow alternates datagrams (UDP) or segments (TCP) between client and server, up to the classifier's budget,
//! with random lengths and bytes from a fixed-seed generator, between two random ports above 1023 (well-known
//! ports are left out: several detectors rightly take a port as part of their evidence, as nDPI does). It fails when
//! the registry names more than [`MAX_CLAIMED_PER_MILLION`] flows per million of either transport.

use std::collections::BTreeMap;

use flowbundle_protocols::{Classifier, Direction, Registry, Transport, Verdict};

/// Flows per transport.
const FLOWS: u32 = 20_000;
/// Most random flows per million the registry may name, per transport.
const MAX_CLAIMED_PER_MILLION: u64 = 250;

/// xorshift64*: a fixed, dependency-free generator (the test must be repeatable, not cryptographic).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

fn claims(transport: Transport, seed: u64) -> BTreeMap<&'static str, u64> {
    let reg = Registry::builtin();
    let mut rng = Rng(seed);
    let mut claimed: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut buf = vec![0u8; 1400];
    for _ in 0..FLOWS {
        let cport = 1024 + rng.below(64_512) as u16;
        let sport = 1024 + rng.below(64_512) as u16;
        let mut c = Classifier::new(&reg, transport, cport, sport);
        for i in 0..24 {
            let dir = if i % 2 == 0 || rng.below(4) == 0 {
                Direction::ToServer
            } else {
                Direction::ToClient
            };
            let len = 1 + rng.below(1400) as usize;
            rng.fill(&mut buf[..len]);
            match c.feed(&reg, dir, &buf[..len]) {
                Verdict::Pending => {}
                Verdict::Matched(id) => {
                    *claimed.entry(id.proto.name()).or_default() += 1;
                    break;
                }
                Verdict::NoMatch => break,
            }
        }
    }
    claimed
}

#[test]
fn random_flows_stay_unnamed() {
    for (transport, seed) in [
        (Transport::Udp, 0x9e37_79b9_7f4a_7c15),
        (Transport::Tcp, 0xd1b5_4a32_d192_ed03),
    ] {
        let claimed = claims(transport, seed);
        let total: u64 = claimed.values().sum();
        println!(
            "{transport:?}: {total} of {FLOWS} random flows named: {}",
            claimed
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert!(
            total * 1_000_000 <= MAX_CLAIMED_PER_MILLION * u64::from(FLOWS),
            "{transport:?}: {total} of {FLOWS} random flows named ({claimed:?})"
        );
    }
}
