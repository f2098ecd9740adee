//! # Worker: the fourth stage. The parallel runtime: one dispatcher, N pinned workers, bounded queues, and the workloads they run (the inspection engine or a calibrated synthetic cost).
