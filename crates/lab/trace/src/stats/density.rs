//! # Connection density (ANCS'10 Table 1: "the average number of unique connections per one hundred packets")
//!
//! **Definition.** The sequence is the capture's IP packets in file order (packets without an IP header have no
//! connection and are not part of it). It is cut into consecutive, non-overlapping windows of 100 packets; the
//! density is the mean, over the *full* windows, of the number of distinct flow keys in each. The last window
//! is usually partial: it is left out of the mean, because fewer packets can only hold fewer connections and would
//! bias short captures downwards. A capture with fewer than 100 IP packets has no full window; its density is then
//! the number of distinct flows in that one partial window, reported with `partial: true`.
//!
//! **Cost.** Flows are told apart by their 64-bit keyed hash in a 256-slot open-addressing set cleared after each
//! window: no allocation, no dependence on the flow table (so the density stays exact when the flow table is full),
//! and a wrong merge needs two of at most a few hundred keys to collide in 64 bits.

/// Slots of the per-window set: a power of two, at least twice the largest window it serves.
const MIN_SLOTS: usize = 256;

/// Distinct flows per window of `window` packets.
#[derive(Debug, Clone)]
pub struct DensityMeter {
    window: usize,
    slots: Vec<u64>,
    /// Packets in the current window.
    in_window: usize,
    /// Distinct flows in the current window.
    distinct: u64,
    full_windows: u64,
    /// Sum of distinct flows over full windows.
    sum: u64,
}

/// What the meter found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Density {
    /// Mean distinct flows per full window, or per the only (partial) window when there is no full one; `None`
    /// without any packet.
    pub mean: Option<f64>,
    /// Full windows averaged.
    pub full_windows: u64,
    /// Packets in the trailing partial window (left out of the mean unless it is the only window).
    pub partial_packets: u64,
    /// Distinct flows in the trailing partial window.
    pub partial_flows: u64,
    /// True when the mean comes from the partial window alone.
    pub partial: bool,
}

impl DensityMeter {
    /// Windows of `window` packets (at least 1; the caller caps it, the set grows to twice the window).
    pub fn new(window: usize) -> Self {
        let window = window.max(1);
        DensityMeter {
            window,
            slots: vec![0; (window * 2).next_power_of_two().max(MIN_SLOTS)],
            in_window: 0,
            distinct: 0,
            full_windows: 0,
            sum: 0,
        }
    }

    /// Counts one IP packet of the flow whose keyed hash is `hash`.
    #[inline]
    pub fn add(&mut self, hash: u64) {
        // 0 marks a free slot.
        let h = hash.max(1);
        let mask = self.slots.len() - 1;
        let mut i = (h as usize) & mask;
        loop {
            let s = self.slots[i];
            if s == h {
                break;
            }
            if s == 0 {
                self.slots[i] = h;
                self.distinct += 1;
                break;
            }
            i = (i + 1) & mask;
        }
        self.in_window += 1;
        if self.in_window == self.window {
            self.full_windows += 1;
            self.sum += self.distinct;
            self.slots.fill(0);
            self.in_window = 0;
            self.distinct = 0;
        }
    }

    pub fn result(&self) -> Density {
        let partial = self.full_windows == 0 && self.in_window > 0;
        let mean = if self.full_windows > 0 {
            Some(self.sum as f64 / self.full_windows as f64)
        } else if partial {
            Some(self.distinct as f64)
        } else {
            None
        };
        Density {
            mean,
            full_windows: self.full_windows,
            partial_packets: self.in_window as u64,
            partial_flows: self.distinct,
            partial,
        }
    }

    pub fn memory_bytes(&self) -> usize {
        self.slots.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_and_partial_windows() {
        let mut d = DensityMeter::new(100);
        // Window 1: 100 packets of 10 flows; window 2: 100 packets of 50 flows; then 30 packets of 30 flows.
        for i in 0..100u64 {
            d.add(i % 10 + 1);
        }
        for i in 0..100u64 {
            d.add(1000 + i % 50);
        }
        for i in 0..30u64 {
            d.add(5000 + i);
        }
        let r = d.result();
        assert_eq!(r.mean, Some(30.0));
        assert_eq!(r.full_windows, 2);
        assert_eq!(
            (r.partial_packets, r.partial_flows, r.partial),
            (30, 30, false)
        );
    }

    #[test]
    fn short_capture_uses_its_partial_window() {
        let mut d = DensityMeter::new(100);
        assert_eq!(d.result().mean, None);
        for h in [7u64, 7, 9, 0, 0] {
            d.add(h);
        }
        let r = d.result();
        assert_eq!(r.mean, Some(3.0));
        assert!(r.partial);
    }

    #[test]
    fn one_flow_per_packet() {
        let mut d = DensityMeter::new(100);
        for i in 0..1000u64 {
            d.add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        }
        assert_eq!(d.result().mean, Some(100.0));
    }
}
