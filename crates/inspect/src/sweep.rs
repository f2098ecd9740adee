//! # Idle-flow sweeps in packet time
//!
//! A flow ends by timeout when a later packet of its own finds it expired, in a sweep, or at the end of the input.
//! (Ending the idle flows of a shard when a new flow arrived in it, as the engine once did, made the output depend on
//! which flows share a shard, i.e. on the scheduler, on inputs whose time goes backwards.) A flow whose key never
//! comes back would otherwise stay tracked until the end: on a long input (a capture of days, or the same traffic
//! merged many times over) the flow table, and with it the process's memory, grew with the input's length (4.8×
//! peak RSS from 1× to 10× the merged trace). Suricata's flow manager thread sweeps its hash table on a wall-clock
//! tick; here the tick is *capture time*, so a file gives the same result however fast it is read.
//!
//! [`SweepClock`] decides when: after a packet whose capture time is at least [`SweepConfig::every_ns`] past the
//! previous sweep, and only once [`SweepConfig::min_packets`] packets have been read since (a sweep reads every
//! shard's expiry floor, 512 KiB, and in the streaming runtime waits for the packets in flight, so it must not run
//! per packet however sparse the capture); after a jump in capture time past the longest flow timeout
//! ([`SweepConfig::gap_ns`]) [`SweepConfig::min_packets_after_gap`] packets are enough, since every flow seen before
//! the jump has timed out (copies of a trace one after another, captures of different days merged). A sweep ([`Engine::expire_all`](crate::Engine::expire_all)) ends every
//! flow, in every shard, whose timeout has passed at the latest capture time read, in the order of their deadlines
//! (then flow ids), whatever the shard layout.
//!
//! Both loops sweep at the same input positions: the single-threaded loop after processing the packet the clock
//! names, the streaming reader after every packet dispatched before it has been inspected (it waits for the arena to
//! drain, so no worker holds a shard), before reading the next one. The sweep then sees the same flows in the same
//! state, and the output is the same for any thread count and scheduler. What it ends would have ended with the
//! same record later (timeout is decided by each flow's own timestamps); only when it is written changes.
//!
//! Memory is then bounded by the flows active within the longest timeout (600 s for established TCP) plus one sweep
//! period of capture time, whatever the input's length.

/// When idle flows are swept (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepConfig {
    /// Capture time between sweeps. Default 10 s; 0 turns sweeps off.
    pub every_ns: u64,
    /// Fewest packets read between two sweeps. Default 16,384.
    pub min_packets: u64,
    /// A jump in capture time of at least this much since the last sweep (the longest flow timeout, 600 s, by
    /// default; 0: never) makes a sweep due after only [`Self::min_packets_after_gap`] packets: every flow seen before
    /// the jump has timed out, and a sparse stretch of input (captures of days merged, copies of a trace one after
    /// another) would otherwise keep them all tracked until `min_packets` more packets came.
    pub gap_ns: u64,
    /// Fewest packets read between two sweeps when capture time jumped by [`Self::gap_ns`]. Default 1,024.
    pub min_packets_after_gap: u64,
}

impl Default for SweepConfig {
    fn default() -> Self {
        SweepConfig {
            every_ns: 10_000_000_000,
            min_packets: 16_384,
            gap_ns: 600_000_000_000,
            min_packets_after_gap: 1_024,
        }
    }
}

/// Decides, packet by packet, when the next sweep is due (see the module documentation).
#[derive(Debug, Clone)]
pub struct SweepClock {
    cfg: SweepConfig,
    /// Latest capture time read.
    now_ns: u64,
    /// Capture time of the last sweep (or of the first packet).
    last_sweep_ns: Option<u64>,
    since: u64,
    sweeps: u64,
}

impl SweepClock {
    pub fn new(cfg: SweepConfig) -> Self {
        SweepClock {
            cfg,
            now_ns: 0,
            last_sweep_ns: None,
            since: 0,
            sweeps: 0,
        }
    }

    /// Notes a packet read (every packet, fragments a defragmenter absorbs included); returns the capture time to
    /// sweep at when a sweep is due once this packet has been inspected.
    #[inline]
    pub fn packet(&mut self, ts_ns: u64) -> Option<u64> {
        self.now_ns = self.now_ns.max(ts_ns);
        self.since += 1;
        let last = *self.last_sweep_ns.get_or_insert(self.now_ns);
        let elapsed = self.now_ns.saturating_sub(last);
        let enough_packets = self.since >= self.cfg.min_packets
            || (self.cfg.gap_ns != 0
                && elapsed >= self.cfg.gap_ns
                && self.since >= self.cfg.min_packets_after_gap);
        if self.cfg.every_ns == 0 || elapsed < self.cfg.every_ns || !enough_packets {
            return None;
        }
        self.last_sweep_ns = Some(self.now_ns);
        self.since = 0;
        self.sweeps += 1;
        Some(self.now_ns)
    }

    /// Sweeps called so far.
    pub fn sweeps(&self) -> u64 {
        self.sweeps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_sweep_needs_both_the_time_and_the_packets() {
        let mut c = SweepClock::new(SweepConfig {
            every_ns: 10 * S,
            min_packets: 3,
            gap_ns: 0,
            min_packets_after_gap: 0,
        });
        assert_eq!(c.packet(100 * S), None, "first packet starts the clock");
        assert_eq!(c.packet(200 * S), None, "time passed, too few packets");
        assert_eq!(
            c.packet(150 * S),
            Some(200 * S),
            "third packet: due, at the latest time read"
        );
        assert_eq!(c.packet(300 * S), None);
        assert_eq!(c.packet(301 * S), None);
        assert_eq!(c.packet(305 * S), Some(305 * S));
        for t in 0..10 {
            assert_eq!(
                c.packet(306 * S + t),
                None,
                "less than 10 s since the last sweep"
            );
        }
        assert_eq!(c.sweeps(), 2);
    }

    #[test]
    fn zero_turns_sweeps_off() {
        let mut c = SweepClock::new(SweepConfig {
            every_ns: 0,
            min_packets: 0,
            gap_ns: 0,
            min_packets_after_gap: 0,
        });
        assert!((0..100).all(|i| c.packet(i * 1000 * S).is_none()));
    }

    #[test]
    fn a_jump_past_the_longest_timeout_needs_fewer_packets() {
        let mut c = SweepClock::new(SweepConfig {
            every_ns: 10 * S,
            min_packets: 100,
            gap_ns: 600 * S,
            min_packets_after_gap: 3,
        });
        assert_eq!(c.packet(0), None, "first packet starts the clock");
        assert_eq!(c.packet(20 * S), None, "10 s passed, but 2 of 100 packets");
        assert_eq!(c.packet(30 * S), None, "3 packets, but no jump");
        assert_eq!(
            c.packet(3_600 * S),
            Some(3_600 * S),
            "an hour later: due after 3 packets"
        );
        assert_eq!(c.packet(3_601 * S), None);
        assert_eq!(c.packet(3_602 * S), None);
        assert_eq!(
            c.packet(3_603 * S),
            None,
            "3 packets, 3 s: no jump, and 3 < 100"
        );
        assert_eq!(c.packet(7_200 * S), Some(7_200 * S), "another jump");
        assert_eq!(c.sweeps(), 2);
    }
}
