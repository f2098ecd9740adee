//! Addresses DNS carries: the A and AAAA records of a DNS message (answers, authorities and additionals), found
//! without allocating so that [`crate::anonymize::Anonymizer`] can map them with the mapping it applies to the IP
//! headers. A lookup's answer then names the anonymized server the client goes on to reach, not the real one.

/// UDP ports of DNS and multicast DNS.
pub fn is_dns_port(port: u16) -> bool {
    matches!(port, 53 | 5353)
}

/// Calls `found(offset, len)` for the address of each A (`len` 4) and AAAA (`len` 16) record of the DNS message
/// `msg`, in message order. A message that ends early or is malformed gives the records before the damage.
pub fn for_each_address(msg: &[u8], mut found: impl FnMut(usize, usize)) {
    let be16 = |i: usize| -> Option<usize> {
        Some(usize::from(u16::from_be_bytes([
            *msg.get(i)?,
            *msg.get(i + 1)?,
        ])))
    };
    let (Some(qd), Some(an), Some(ns), Some(ar)) = (be16(4), be16(6), be16(8), be16(10)) else {
        return;
    };
    let mut i = 12;
    for _ in 0..qd {
        let Some(end) = skip_name(msg, i) else {
            return;
        };
        i = end + 4;
    }
    for _ in 0..an + ns + ar {
        let Some(end) = skip_name(msg, i) else {
            return;
        };
        let (Some(rtype), Some(rdlen)) = (be16(end), be16(end + 8)) else {
            return;
        };
        let rdata = end + 10;
        if rdata + rdlen > msg.len() {
            return;
        }
        if (rtype == 1 && rdlen == 4) || (rtype == 28 && rdlen == 16) {
            found(rdata, rdlen);
        }
        i = rdata + rdlen;
    }
}

/// The offset just past the (possibly compressed) name at `i`.
fn skip_name(msg: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let len = *msg.get(i)?;
        match len & 0xc0 {
            0 if len == 0 => return Some(i + 1),
            0 => i += 1 + usize::from(len),
            // A pointer ends the name where it stands.
            0xc0 => return msg.get(i + 1).map(|_| i + 2),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_and_aaaa_records_behind_compressed_names() {
        // Query example.com A; answers: A 93.184.216.34 (name by pointer), a CNAME, an AAAA.
        let mut m = vec![0x12, 0x34, 0x81, 0x80, 0, 1, 0, 3, 0, 0, 0, 0];
        m.extend_from_slice(b"\x07example\x03com\x00\x00\x01\x00\x01");
        m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 93, 184, 216, 34]);
        m.extend_from_slice(&[0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 2, 0xc0, 12]);
        m.extend_from_slice(&[0xc0, 12, 0, 28, 0, 1, 0, 0, 0, 60, 0, 16]);
        m.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        let mut found = Vec::new();
        for_each_address(&m, |o, l| found.push((o, l)));
        assert_eq!(found.len(), 2);
        assert_eq!(&m[found[0].0..found[0].0 + 4], &[93, 184, 216, 34]);
        assert_eq!(found[1].1, 16);
        assert_eq!(m[found[1].0], 0x20);
        // Cut anywhere: no panic, only the records before the cut.
        for cut in 0..m.len() {
            let mut n = 0;
            for_each_address(&m[..cut], |o, l| {
                assert!(o + l <= cut);
                n += 1;
            });
            assert!(n <= 2);
        }
    }
}
