//! Discrete-event simulator: the real scheduler policies on 1–64 simulated cores with a cache model.
