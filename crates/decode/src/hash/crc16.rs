//! CRC-16 over the FID, the ANCS'10 paper's bundle hash (§3: "a 16-bit CRC because it is known to provide good
//! load distribution", citing Cao et al.'s study of hash-based load balancing, which evaluated the CCITT
//! polynomial).
//!
//! The paper does not name a variant; we use **CRC-16/IBM-3740** (also called CRC-16/CCITT-FALSE): polynomial
//! 0x1021, initial value 0xFFFF, no reflection, no final XOR, check value 0x29B1 for "123456789". It is the most
//! widely implemented CCITT variant, and the non-zero initial value keeps leading zero bytes (common in IPv6
//! addresses) from hashing to zero. Input: the smaller address then the larger (4 + 4 bytes for IPv4, 16 + 16 for
//! IPv6), so both directions of a conversation land in one bundle.
//!
//! Eight bytes at a time: with one table the CRC is a chain of one dependent lookup per byte, and it was the
//! streaming reader thread's largest single cost (`perf`, merged nDPI trace, `--threads 2 --scheduler lfb`: 2.2–2.7%
//! of the run's CPU samples, nearly all in the byte loop, for an 8- or 32-byte FID). The `crc` crate's slice-by-16
//! tables (8 KiB, built at compile time) give the eight lookups of a block that do not depend on one another
//! (slicing-by-8: entry `k` of a byte is its CRC followed by `k` zero bytes); the crate itself slices only 16-byte
//! blocks, and an IPv4 FID is 8 bytes.

use crc::{CRC_16_IBM_3740, Crc, Table};

/// The CRC-16 engine (tables built at compile time).
pub const CRC16: Crc<u16, Table<16>> = Crc::<u16, Table<16>>::new(&CRC_16_IBM_3740);

/// CRC-16/IBM-3740 of `bytes`.
#[inline]
pub fn crc16(bytes: &[u8]) -> u16 {
    let t = CRC16.table();
    // CRC-16/IBM-3740: initial value 0xFFFF, not reflected, no final XOR.
    let mut crc: u16 = 0xffff;
    let mut blocks = bytes.chunks_exact(8);
    for b in &mut blocks {
        let [hi, lo] = crc.to_be_bytes();
        crc = t[7][usize::from(b[0] ^ hi)]
            ^ t[6][usize::from(b[1] ^ lo)]
            ^ t[5][usize::from(b[2])]
            ^ t[4][usize::from(b[3])]
            ^ t[3][usize::from(b[4])]
            ^ t[2][usize::from(b[5])]
            ^ t[1][usize::from(b[6])]
            ^ t[0][usize::from(b[7])];
    }
    for &b in blocks.remainder() {
        crc = t[0][usize::from((crc >> 8) as u8 ^ b)] ^ (crc << 8);
    }
    crc
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
    fn slice_by_16_agrees_with_the_byte_table_on_every_length_up_to_40() {
        let byte: Crc<u16> = Crc::<u16>::new(&CRC_16_IBM_3740);
        let data: Vec<u8> = (0..40u32).map(|i| (i * 37 + 11) as u8).collect();
        for n in 0..=data.len() {
            assert_eq!(crc16(&data[..n]), byte.checksum(&data[..n]), "length {n}");
        }
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
