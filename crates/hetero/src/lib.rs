//! Heterogeneous placement (Pythia): packet applications as batch kernels on CPU and OpenCL devices, profiled and scheduled by policy.
