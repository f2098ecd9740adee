//! SN1 and SN2: sequential address assignment (Verdú thesis §3.3.1, Table 3.1).
//!
//! Each address gets the next value of a counter the first time it is seen, so the mapping depends on the order
//! of first appearance and needs a table of the addresses seen (capped: [`Sequential::new`]'s `cap`; a full table
//! stops the run with [`ToolError::AddressCap`] rather than growing).
//!
//! * **SN1** counts up from `10.0.0.1` (IPv6: `fd00::1`), incrementing the last octet with carry: `10.0.0.1`,
//!   `10.0.0.2`, ... (4.1 billion IPv4 addresses before the space is exhausted).
//! * **SN2** increments one octet per new address, the octet chosen round-robin from the last to the first:
//!   `10.0.0.1`, `10.0.1.1`, `10.1.1.1`, `11.1.1.1`, `11.1.1.2`, ... exactly as Table 3.1 shows. The thesis does
//!   not say what happens when the first octet reaches 255 (after 980 addresses); here the sequence continues in
//!   *laps*: lap `L` adds `2·dᵢ` (mod 256) to the three lower octets, where `dᵢ` are the base-128 digits of `L`.
//!   Within a lap every octet below the first is within one of the first octet's count, and two laps differ by an
//!   even non-zero amount in some lower octet, so no two addresses of any laps coincide (2 billion IPv4 addresses
//!   in all). IPv6 works the same way on octets 15 down to 1 under a fixed `fd` first octet (3,825 addresses a lap).
//!
//! Both mappings are injective, so flows stay distinct: flow count, flow sizes and the unique flow rate of the
//! trace are unchanged.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use hashbrown::HashMap;

use crate::rewrite::{AddressMap, ToolError};

/// Which sequential method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// SN1: last octet with carry.
    Sn1,
    /// SN2: octet chosen round-robin.
    Sn2,
}

/// First SN1 IPv4 address (10.0.0.1) minus one.
const SN1_V4_BASE: u32 = 0x0a00_0000;
/// First SN1 IPv6 address (fd00::1) minus one.
const SN1_V6_BASE: u128 = 0xfd00 << 112;

/// The `n`-th SN2 address (`n` ≥ 1) over `W` octets starting at `base`, incrementing octets `W-1` down to
/// `first` round-robin; `None` past the last lap. See the module documentation for the laps.
fn sn2_octets<const W: usize>(n: u64, base: [u8; W], first: usize) -> Option<[u8; W]> {
    let p = (W - first) as u64;
    let cap = u64::from(255 - base[first]);
    if n == 0 || p < 2 || cap == 0 {
        return None;
    }
    let lap_len = cap * p;
    let m = n - 1;
    let mut lap = u128::from(m / lap_len);
    let w = m % lap_len;
    let (q, r) = (w / p, w % p);
    let mut out = base;
    for k in 0..p {
        let pos = W - 1 - k as usize;
        let c = q + u64::from(k <= r);
        let off = if k + 1 < p {
            let d = (lap % 128) as u64;
            lap /= 128;
            2 * d
        } else {
            0
        };
        out[pos] = (u64::from(base[pos]) + c + off) as u8;
    }
    // Laps beyond the digits available would repeat.
    (lap == 0).then_some(out)
}

/// The `n`-th SN2 IPv4 address (`n` ≥ 1).
pub fn sn2_v4(n: u64) -> Option<Ipv4Addr> {
    sn2_octets(n, [10, 0, 0, 0], 0).map(Ipv4Addr::from)
}

/// The `n`-th SN2 IPv6 address (`n` ≥ 1).
pub fn sn2_v6(n: u64) -> Option<Ipv6Addr> {
    let mut base = [0u8; 16];
    base[0] = 0xfd;
    sn2_octets(n, base, 1).map(Ipv6Addr::from)
}

/// The `n`-th SN1 IPv4 address (`n` ≥ 1).
pub fn sn1_v4(n: u64) -> Option<Ipv4Addr> {
    u32::try_from(n)
        .ok()
        .and_then(|n| SN1_V4_BASE.checked_add(n))
        .map(Ipv4Addr::from)
}

/// The `n`-th SN1 IPv6 address (`n` ≥ 1).
pub fn sn1_v6(n: u64) -> Option<Ipv6Addr> {
    SN1_V6_BASE.checked_add(u128::from(n)).map(Ipv6Addr::from)
}

/// A sequential map (SN1 or SN2) with a capped table.
#[derive(Debug, Clone)]
pub struct Sequential {
    order: Order,
    table: HashMap<IpAddr, IpAddr, foldhash::fast::FixedState>,
    next_v4: u64,
    next_v6: u64,
    cap: usize,
}

impl Sequential {
    /// A map that holds at most `cap` distinct addresses.
    pub fn new(order: Order, cap: usize) -> Sequential {
        Sequential {
            order,
            table: HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0x5eed)),
            next_v4: 1,
            next_v6: 1,
            cap,
        }
    }

    /// Distinct addresses seen so far.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no address was seen yet.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

impl AddressMap for Sequential {
    fn map(&mut self, addr: IpAddr) -> Result<IpAddr, ToolError> {
        if let Some(&a) = self.table.get(&addr) {
            return Ok(a);
        }
        if self.table.len() >= self.cap {
            return Err(ToolError::AddressCap { cap: self.cap });
        }
        let new = match (addr, self.order) {
            (IpAddr::V4(_), Order::Sn1) => sn1_v4(self.next_v4).map(IpAddr::V4),
            (IpAddr::V4(_), Order::Sn2) => sn2_v4(self.next_v4).map(IpAddr::V4),
            (IpAddr::V6(_), Order::Sn1) => sn1_v6(self.next_v6).map(IpAddr::V6),
            (IpAddr::V6(_), Order::Sn2) => sn2_v6(self.next_v6).map(IpAddr::V6),
        };
        let new = new.ok_or(ToolError::AddressSpace(match addr {
            IpAddr::V4(_) => "IPv4 sequential",
            IpAddr::V6(_) => "IPv6 sequential",
        }))?;
        match addr {
            IpAddr::V4(_) => self.next_v4 += 1,
            IpAddr::V6(_) => self.next_v6 += 1,
        }
        self.table.insert(addr, new);
        Ok(new)
    }

    fn distinct(&self) -> Option<usize> {
        Some(self.table.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn v4(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn table_3_1_of_the_thesis() {
        // Verdú thesis Table 3.1: real addresses and their SN1 / SN2 forms (a repeated address keeps its value).
        let real = [
            "192.161.35.48",
            "145.32.148.23",
            "192.161.35.48",
            "137.239.42.12",
            "195.232.62.17",
            "131.25.105.36",
        ];
        let sn1 = [
            "10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.3", "10.0.0.4", "10.0.0.5",
        ];
        let sn2 = [
            "10.0.0.1", "10.0.1.1", "10.0.0.1", "10.1.1.1", "11.1.1.1", "11.1.1.2",
        ];
        let mut m1 = Sequential::new(Order::Sn1, 100);
        let mut m2 = Sequential::new(Order::Sn2, 100);
        for ((r, a), b) in real.iter().zip(sn1).zip(sn2) {
            assert_eq!(m1.map(v4(r)).unwrap(), v4(a));
            assert_eq!(m2.map(v4(r)).unwrap(), v4(b));
        }
        assert_eq!(m1.len(), 5);
    }

    #[test]
    fn sn2_stays_injective_across_laps() {
        let mut seen = HashSet::new();
        for n in 1..=30_000u64 {
            let a = sn2_v4(n).unwrap();
            assert!(seen.insert(a), "SN2 repeated {a} at {n}");
        }
        // The first lap ends at 255.x.x.x, the second starts again at 10.0.0.3.
        assert_eq!(sn2_v4(980), Some(Ipv4Addr::new(255, 245, 245, 245)));
        assert_eq!(sn2_v4(981), Some(Ipv4Addr::new(10, 0, 0, 3)));
        let mut seen6 = HashSet::new();
        for n in 1..=20_000u64 {
            assert!(seen6.insert(sn2_v6(n).unwrap()));
        }
        assert_eq!(sn2_v6(2), Some("fd00::101".parse().unwrap()));
    }

    #[test]
    fn cap_and_exhaustion_are_errors() {
        let mut m = Sequential::new(Order::Sn1, 2);
        m.map(v4("1.1.1.1")).unwrap();
        m.map(v4("1.1.1.2")).unwrap();
        assert_eq!(m.map(v4("1.1.1.1")).unwrap(), v4("10.0.0.1"));
        assert!(matches!(
            m.map(v4("1.1.1.3")),
            Err(ToolError::AddressCap { cap: 2 })
        ));
        assert_eq!(sn1_v4(u64::from(u32::MAX)), None);
        assert_eq!(sn1_v6(1), Some("fd00::1".parse().unwrap()));
    }
}
