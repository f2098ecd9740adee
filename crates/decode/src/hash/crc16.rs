//! CRC-16 over the FID, the ANCS'10 paper's bundle hash (§3: "a 16-bit CRC because it is known to provide good
//! load distribution", citing Cao et al.'s study of hash-based load balancing, which evaluated the CCITT
//! polynomial).
//!
//! The paper does not name a variant; we use **CRC-16/IBM-3740** (also called CRC-16/CCITT-FALSE): polynomial
//! 0x1021, initial value 0xFFFF, no reflection, no final XOR, check value 0x29B1 for "123456789". It is the most
//! widely implemented CCITT variant, and the non-zero initial value keeps leading zero bytes (common in IPv6
//! addresses) from hashing to zero. Input: the smaller address then the larger (4 + 4 bytes for IPv4, 16 + 16 for
//! IPv6), so both directions of a conversation land in one bundle. The `crc` crate's byte-table implementation
//! costs about one table lookup per byte.

use crc::{CRC_16_IBM_3740, Crc};

/// The CRC-16 engine (table built at compile time).
pub const CRC16: Crc<u16> = Crc::<u16>::new(&CRC_16_IBM_3740);

/// CRC-16/IBM-3740 of `bytes`.
#[inline]
pub fn crc16(bytes: &[u8]) -> u16 {
    CRC16.checksum(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::Fid;
    use std::net::IpAddr;

    #[test]
    fn check_value() {
        assert_eq!(crc16(b"123456789"), 0x29b1);
    }

    #[test]
    fn fid_is_symmetric_and_orders_addresses() {
        let a: IpAddr = "161.142.100.80".parse().unwrap();
        let b: IpAddr = "66.9.149.187".parse().unwrap();
        assert_eq!(Fid::new(a, b).crc16(), Fid::new(b, a).crc16());
        // Smaller address first: 66.9.149.187 then 161.142.100.80.
        assert_eq!(
            Fid::new(a, b).crc16(),
            crc16(&[66, 9, 149, 187, 161, 142, 100, 80])
        );
        let c: IpAddr = "fe80::1".parse().unwrap();
        let d: IpAddr = "2001:db8::2".parse().unwrap();
        let (bytes, n) = Fid::new(c, d).bytes();
        assert_eq!(n, 32);
        assert_eq!(bytes[0..2], [0x20, 0x01]);
        assert_eq!(Fid::new(c, d).crc16(), Fid::new(d, c).crc16());
    }
}
