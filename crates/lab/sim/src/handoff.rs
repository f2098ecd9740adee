//! # What moving a packet from one stage group to the next costs, measured on the real runtime
//!
//! The staged execution models ([`crate::exec`]) move a packet between core groups. The real runtime
//! (`flowbundle inspect --exec pipeline|multilayer`, `crates/worker/src/staged.rs` and `crates/inspect/src/staged.rs`)
//! pays for each move:
//!
//! * in the **sending** worker: recording the packet's script (every byte the rules will read is copied, the flow's
//!   label and metadata cloned, its events moved), then `hand_over` (the next group's lock and its policy's
//!   `dispatch`), and waking a parked worker of the next group when there is one;
//! * in the **receiving** worker: the policy's `next`/`claim`/`done` in its group, and replaying the script (the
//!   calls themselves are detection's own cost, which run-to-completion pays too);
//! * in the **memory system**: the receiving core reads what the sender wrote (the descriptor and the script's
//!   header: [`Handoff::record_lines`]; the copied bytes: [`Handoff::copied_per_payload_byte`] of the packet's
//!   payload), each line a coherence transfer from the sender's core.
//!
//! The first two are instruction counts, measured with callgrind on the real runtime by `scripts/measure-handoff`
//! (deterministic whatever the load): the staged run's instructions minus the single-threaded run's on the same
//! trace, idle loops left out, divided by the packets that crossed, and split by thread (the flow group's workers
//! send, the detection group's receive). They become cycles at the engine's measured cycles per instruction
//! ([`Handoff::cycles_per_instruction`]: CPU time of the single-threaded run over its instructions, at the host's
//! clock). The lines go through the simulator's cache model, which charges each as a transfer at the machine's
//! latency. The file the script writes is `crates/lab/sim/data/handoff.json` ([`MEASURED_HANDOFF`]); `flowbundle
//! simulate --exec-handoff FILE` reads another.
//!
//! Waking a parked receiver is measured apart (`scripts/measure-handoff --wake-only`: parks of the detection worker
//! per packet handed over, and the waker's cost of one futex wake, [`Handoff::wakeups_per_packet`],
//! [`Handoff::wake_ns`]) and charged to the sender. What the measurement leaves out, and the model with it: the
//! sleeper's scheduling latency (the woken thread's wait to run), and idle spinning (waiting, not work: on
//! dedicated cores it costs nobody anything; on an oversubscribed host it does, which is a property of the host).

use serde::{Deserialize, Serialize};

/// The runtime's per-packet hand-off cost between stage groups.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Handoff {
    /// What measured it (the script's command line, the commit, the trace and rules), or why there is none.
    pub source: String,
    /// The sending worker's instructions per packet handed over, beyond what run-to-completion spends on it.
    pub send_instructions: f64,
    /// The receiving worker's instructions per packet handed over, beyond what run-to-completion spends on it.
    pub receive_instructions: f64,
    /// Lines the receiver reads that the sender wrote, besides copied bytes (descriptor, script header, events).
    pub record_lines: f64,
    /// Bytes copied into the script per payload byte of a packet entering a group that reads the payload.
    pub copied_per_payload_byte: f64,
    /// Cycles per instruction of the engine on the measuring host, to turn the counts into cycles.
    pub cycles_per_instruction: f64,
    /// Packets per queue operation when the runtime batches hand-offs (1: per packet). The instruction counts are
    /// already per packet (a batch's cost divided by its packets); this only documents what was measured.
    #[serde(default = "one")]
    pub batch: u32,
    /// Wake-ups of a parked worker of the receiving group per packet handed over, and what one costs the waker
    /// (the futex wake of a parked thread), measured by `scripts/measure-handoff --wake-only` (parks of the
    /// detection worker in native runs; the `wake_cost` example of `flowbundle-worker`). 0 when not measured.
    #[serde(default)]
    pub wakeups_per_packet: f64,
    #[serde(default)]
    pub wake_ns: f64,
}

fn one() -> u32 {
    1
}

/// The hand-off measured on this engine by `scripts/measure-handoff` (see the module documentation).
pub const MEASURED_HANDOFF: &str = include_str!("../data/handoff.json");

impl Handoff {
    /// The measurement built in ([`MEASURED_HANDOFF`]); [`Handoff::none`] should it not read (a unit test checks
    /// it does).
    pub fn measured() -> Self {
        Handoff::from_json(MEASURED_HANDOFF).unwrap_or_else(|_| Handoff::none())
    }

    /// No measured cost: a hop costs the runtime overheads of [`crate::params::Overheads`] (the sender's
    /// `dispatch`, the receiver's `worker`) and two lines, as the simulator charged before the measurement.
    pub fn none() -> Self {
        Handoff {
            source: "none: the policy's overheads and two lines per hop".into(),
            send_instructions: 0.0,
            receive_instructions: 0.0,
            record_lines: 2.0,
            copied_per_payload_byte: 0.0,
            cycles_per_instruction: 0.0,
            batch: 1,
            wakeups_per_packet: 0.0,
            wake_ns: 0.0,
        }
    }

    /// Whether instruction counts were measured (else the overheads stand in for them).
    pub fn is_measured(&self) -> bool {
        self.cycles_per_instruction > 0.0
            && (self.send_instructions > 0.0 || self.receive_instructions > 0.0)
    }

    /// The sender's cycles per packet handed over at `clock_ghz`: its instructions, and its share of the wake-ups
    /// of parked receivers.
    pub fn send_cycles(&self, clock_ghz: f64) -> u32 {
        (self.send_instructions * self.cycles_per_instruction
            + self.wakeups_per_packet * self.wake_ns * clock_ghz)
            .round() as u32
    }

    /// The receiver's cycles per packet handed over.
    pub fn receive_cycles(&self) -> u32 {
        (self.receive_instructions * self.cycles_per_instruction).round() as u32
    }

    /// Lines a hop moves from the sender's core for a packet with `payload` bytes entering a group that reads the
    /// payload (`reads_payload`), or not.
    pub fn lines(&self, payload: u32, reads_payload: bool) -> usize {
        let copied = if reads_payload {
            (f64::from(payload) * self.copied_per_payload_byte / 64.0).ceil()
        } else {
            0.0
        };
        (self.record_lines.round() + copied).max(0.0) as usize
    }

    pub fn validate(&self) -> Result<(), String> {
        let ok = |x: f64, max: f64| x.is_finite() && (0.0..=max).contains(&x);
        if !ok(self.send_instructions, 1e7) || !ok(self.receive_instructions, 1e7) {
            return Err("hand-off instructions must be between 0 and 10^7".into());
        }
        if !ok(self.record_lines, 256.0) || !ok(self.copied_per_payload_byte, 16.0) {
            return Err(
                "hand-off lines: 0 to 256 record lines, 0 to 16 copied bytes per byte".into(),
            );
        }
        if !ok(self.wakeups_per_packet, 1e3) || !ok(self.wake_ns, 1e9) {
            return Err("wake-ups per packet 0 to 1000, a wake-up 0 to 1 s".into());
        }
        if !ok(self.cycles_per_instruction, 100.0) || self.batch == 0 {
            return Err("cycles per instruction 0 to 100, batch at least 1".into());
        }
        Ok(())
    }

    pub fn from_json(text: &str) -> Result<Self, String> {
        let h: Handoff = serde_json::from_str(text).map_err(|e| e.to_string())?;
        h.validate()?;
        Ok(h)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

impl Default for Handoff {
    fn default() -> Self {
        Handoff::measured()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_measurement_reads_and_is_measured() {
        let h = Handoff::from_json(MEASURED_HANDOFF).unwrap();
        assert!(h.is_measured(), "{h:?}");
        assert_eq!(Handoff::measured(), h);
        assert!(!Handoff::none().is_measured());
    }

    #[test]
    fn lines_count_the_copy_only_where_the_payload_is_read() {
        let h = Handoff {
            record_lines: 2.0,
            copied_per_payload_byte: 1.0,
            ..Handoff::none()
        };
        assert_eq!(h.lines(1460, false), 2);
        assert_eq!(h.lines(1460, true), 2 + 23);
        assert_eq!(h.lines(0, true), 2);
    }

    #[test]
    fn the_sender_pays_its_share_of_the_wake_ups() {
        let h = Handoff {
            send_instructions: 1000.0,
            cycles_per_instruction: 0.5,
            ..Handoff::none()
        };
        assert_eq!(h.send_cycles(2.0), 500);
        let woken = Handoff {
            wakeups_per_packet: 0.5,
            wake_ns: 1000.0,
            ..h
        };
        assert_eq!(woken.send_cycles(2.0), 500 + 1000);
        let m = Handoff::measured();
        assert!(m.wakeups_per_packet >= 0.0 && m.wake_ns >= 0.0, "{m:?}");
    }

    #[test]
    fn garbage_is_refused() {
        assert!(Handoff::from_json("{").is_err());
        let bad = Handoff {
            cycles_per_instruction: f64::NAN,
            ..Handoff::none()
        };
        assert!(Handoff::from_json(&bad.to_json()).is_err());
    }
}
