//! Heterogeneous placement (Pythia): packet applications as batch kernels on CPU and OpenCL devices, profiled and
//! scheduled by policy.
//!
//! The crate follows the paper (Giakoumakis et al., "Pythia: Scheduling of Concurrent Network Packet Processing
//! Applications on Heterogeneous Devices"), §II–V:
//!
//! | module | paper | what |
//! |---|---|---|
//! | [`kernels`], [`dfa`], [`md5lanes`], [`aeslanes`] | §II-b | the three applications (`dpi`, `md5`, `aes`) as batch kernels: CPU reference and the per-core fast paths (interleaved DFA walks, multi-buffer MD5, interleaved AES-NI CBC) |
//! | [`opencl`] | §III | the same kernels in OpenCL C, mapped memory on shared-memory devices, double-buffered copies on discrete ones |
//! | [`device`] | §II-a | CPU pool, OpenCL devices found at run time, modelled devices (paper figures, always labelled `modelled`) |
//! | [`batch`] | §III-a | batches that keep every flow whole (grouped by 5-tuple before batching) |
//! | [`profile`], [`profiler`] | §III-b | the offline characterisation: app × device × batch × co-workers (Tables I–III) |
//! | [`monitor`], [`sim`], [`runtime`] | §IV–V | the online scheduler: a monitor every interval, policies, devices added and released |
//! | [`energy`] | §I (ii) | RAPL, NVML, or an explicit estimate labelled as such |
//! | [`plot`] | §V Fig. 4 | the SVG timeline |
//!
//! # Features
//! * `opencl` (**on by default**): OpenCL devices through `opencl3` with its `dynamic` feature. The ICD loader
//!   (`libOpenCL.so.1`) is opened at run time, so building needs nothing, and a machine without it gets a clear
//!   message from [`device::discover`] and runs on the CPU only. Because it costs nothing at build time it is a
//!   default feature; `--no-default-features` removes the code altogether.
//! * `nvml` (**on by default**, same reasoning): NVIDIA power through `nvml-wrapper`, which also loads its library
//!   at run time.

pub mod aeslanes;
pub mod batch;
pub mod device;
pub mod dfa;
pub mod energy;
pub mod kernels;
pub mod md5lanes;
pub mod monitor;
#[cfg(feature = "opencl")]
pub mod opencl;
pub mod payload;
pub mod plot;
pub mod profile;
pub mod profiler;
pub mod runtime;
pub mod schedule;
pub mod sim;

pub use batch::{BatchLimits, FlowBatcher, Packet, PacketBatch};
pub use device::{Device, DeviceInfo, DeviceKind};
pub use dfa::{Dfa, DfaLimits, DpiResult};
pub use kernels::{BatchOutput, PacketApp};
pub use monitor::{Monitor, MonitorConfig, Placement, Policy};
pub use profile::Profile;
pub use runtime::{DeviceSet, Replay, RunReport, RuntimeConfig};
pub use schedule::RateSchedule;
