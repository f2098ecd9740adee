//! OpenCL devices (feature `opencl`): the kernels of `kernels/hetero.cl` on every device found at run time.
//!
//! # Loading
//! `opencl3` is built with its `dynamic` feature: `libOpenCL.so.1` (the ICD loader) is opened with `dlopen` on first
//! use, so nothing OpenCL is needed to build, and a machine without the library gets an error from
//! [`discover`] that says so, and runs on the CPU only.
//!
//! # Memory (Pythia §III)
//! * **Shared memory** (`CL_DEVICE_HOST_UNIFIED_MEMORY`, i.e. CPU devices such as PoCL's and integrated GPUs): the
//!   batch's own vectors are wrapped with `CL_MEM_USE_HOST_PTR`, the kernel runs on them in place, and mapping the
//!   output buffer (`clEnqueueMapBuffer`) makes the results coherent for the host. No copy at all; the DFA table is
//!   wrapped the same way, once.
//! * **Discrete** devices: two sets of device buffers. For batch `i` the kernel runs on one set while the upload of
//!   batch `i + 1` goes to the other on a second queue; results (and, for `aes`, payloads: DPI and MD5 leave packets
//!   unchanged, so only AES copies them back, as the paper notes) are read back asynchronously. Event dependencies
//!   order the two queues; a set is only overwritten once the kernel that read it has finished.

use std::ffi::c_void;
use std::ptr;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{CL_DEVICE_TYPE_ALL, Device as ClDevice};
use opencl3::event::Event;
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::{
    Buffer, CL_MAP_READ, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, CL_MEM_USE_HOST_PTR, ClMem,
};
use opencl3::platform::get_platforms;
use opencl3::program::Program;
use opencl3::types::{CL_BLOCKING, CL_NON_BLOCKING, cl_event, cl_mem_flags};

use crate::batch::PacketBatch;
use crate::device::{BatchTiming, Device, DeviceError, DeviceInfo, DeviceKind, MemoryModel};
use crate::dfa::{Dfa, DpiResult};
use crate::kernels::{BatchOutput, PacketApp};

/// The OpenCL C source of the three kernels.
pub const SOURCE: &str = include_str!("../kernels/hetero.cl");

fn err(what: &str, e: impl std::fmt::Display) -> DeviceError {
    DeviceError::OpenCl(format!("{what}: {e}"))
}

/// Everything the handles on one device share: context, program, the DFA on the device.
struct Shared {
    device: ClDevice,
    context: Context,
    program: Program,
    dfa: Arc<Dfa>,
    shared_memory: bool,
    dfa_bufs: OnceLock<Result<DfaBufs, String>>,
}

struct DfaBufs {
    trans: Buffer<u32>,
    classes: Buffer<u8>,
}

// SAFETY: the buffers are only read by kernels after creation; opencl3 marks `Buffer<T: Sync>` Sync.
impl Shared {
    fn dfa_bufs(&self) -> Result<&DfaBufs, DeviceError> {
        let r = self.dfa_bufs.get_or_init(|| {
            let flags = if self.shared_memory {
                CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR
            } else {
                CL_MEM_READ_ONLY
            };
            // The outputs live in the table's rows (see `Dfa::transitions`), so the table and the class map are all
            // the kernel reads; a built DFA has at least two states, so neither buffer is empty.
            let d = &self.dfa;
            let q = queue(&self.context).map_err(|e| e.to_string())?;
            let mk_u32 = |src: &[u32]| -> Result<Buffer<u32>, String> {
                upload(&self.context, &q, flags, self.shared_memory, src).map_err(|e| e.to_string())
            };
            let trans = mk_u32(d.transitions())?;
            let classes = upload(
                &self.context,
                &q,
                flags,
                self.shared_memory,
                &d.classes()[..],
            )
            .map_err(|e| e.to_string())?;
            q.finish().map_err(|e| e.to_string())?;
            Ok(DfaBufs { trans, classes })
        });
        r.as_ref()
            .map_err(|e| DeviceError::OpenCl(format!("DFA upload: {e}")))
    }
}

/// Creates a read-only buffer holding `src`: wrapped in place on shared-memory devices, copied otherwise.
fn upload<T>(
    context: &Context,
    q: &CommandQueue,
    flags: cl_mem_flags,
    shared: bool,
    src: &[T],
) -> Result<Buffer<T>, DeviceError> {
    unsafe {
        if shared {
            Buffer::<T>::create(context, flags, src.len(), src.as_ptr() as *mut c_void)
                .map_err(|e| err("buffer", e))
        } else {
            let mut b = Buffer::<T>::create(context, flags, src.len(), ptr::null_mut())
                .map_err(|e| err("buffer", e))?;
            q.enqueue_write_buffer(&mut b, CL_BLOCKING, 0, src, &[])
                .map_err(|e| err("upload", e))?;
            Ok(b)
        }
    }
}

#[allow(deprecated)]
fn queue(context: &Context) -> Result<CommandQueue, DeviceError> {
    match CommandQueue::create_default_with_properties(context, 0, 0) {
        Ok(q) => Ok(q),
        // OpenCL 1.x devices only have the old entry point.
        Err(_) => CommandQueue::create_default(context, 0).map_err(|e| err("command queue", e)),
    }
}

/// Device buffers of one slot of the discrete pipeline, grown on demand.
#[derive(Default)]
struct Slot {
    cap_bytes: usize,
    cap_packets: usize,
    cap_keys: usize,
    data: Option<Buffer<u8>>,
    offsets: Option<Buffer<u32>>,
    conns: Option<Buffer<u32>>,
    seqs: Option<Buffer<u32>>,
    keys: Option<Buffer<u8>>,
    dpi: Option<Buffer<DpiResult>>,
    md5: Option<Buffer<u8>>,
    /// The kernel that last read this slot; the slot is free once it completed.
    last_kernel: Option<Event>,
}

impl Slot {
    fn ensure(
        &mut self,
        ctx: &Context,
        bytes: usize,
        packets: usize,
        keys: usize,
    ) -> Result<(), DeviceError> {
        let (bytes, packets, keys) = (bytes.max(1), packets.max(1), keys.max(1));
        unsafe {
            if bytes > self.cap_bytes || self.data.is_none() {
                let cap = bytes.next_power_of_two();
                self.data = Some(
                    Buffer::create(ctx, CL_MEM_READ_WRITE, cap, ptr::null_mut())
                        .map_err(|e| err("buffer", e))?,
                );
                self.cap_bytes = cap;
            }
            if packets > self.cap_packets || self.offsets.is_none() {
                let cap = packets.next_power_of_two();
                self.offsets = Some(
                    Buffer::create(ctx, CL_MEM_READ_ONLY, cap + 1, ptr::null_mut())
                        .map_err(|e| err("buffer", e))?,
                );
                self.conns = Some(
                    Buffer::create(ctx, CL_MEM_READ_ONLY, cap, ptr::null_mut())
                        .map_err(|e| err("buffer", e))?,
                );
                self.seqs = Some(
                    Buffer::create(ctx, CL_MEM_READ_ONLY, cap, ptr::null_mut())
                        .map_err(|e| err("buffer", e))?,
                );
                self.dpi = Some(
                    Buffer::create(ctx, CL_MEM_READ_WRITE, cap, ptr::null_mut())
                        .map_err(|e| err("buffer", e))?,
                );
                self.md5 = Some(
                    Buffer::create(ctx, CL_MEM_READ_WRITE, cap * 16, ptr::null_mut())
                        .map_err(|e| err("buffer", e))?,
                );
                self.cap_packets = cap;
            }
            if keys > self.cap_keys || self.keys.is_none() {
                let cap = keys.next_power_of_two();
                self.keys = Some(
                    Buffer::create(ctx, CL_MEM_READ_ONLY, cap * 16, ptr::null_mut())
                        .map_err(|e| err("buffer", e))?,
                );
                self.cap_keys = cap;
            }
        }
        Ok(())
    }
}

/// One handle on an OpenCL device: its own queues, kernels and buffers; context and program shared with forks.
pub struct OpenClDevice {
    info: DeviceInfo,
    shared: Arc<Shared>,
    compute: CommandQueue,
    transfer: CommandQueue,
    k_dpi: Kernel,
    k_md5: Kernel,
    k_aes: Kernel,
    slots: [Slot; 2],
}

// SAFETY-free: all fields are Send (opencl3 marks its handles Send); a handle is used by one thread at a time.

impl OpenClDevice {
    fn open(info: DeviceInfo, shared: Arc<Shared>) -> Result<Self, DeviceError> {
        let compute = queue(&shared.context)?;
        let transfer = queue(&shared.context)?;
        let k = |name: &str| Kernel::create(&shared.program, name).map_err(|e| err(name, e));
        Ok(Self {
            k_dpi: k("dpi")?,
            k_md5: k("md5")?,
            k_aes: k("aes")?,
            info,
            shared,
            compute,
            transfer,
            slots: Default::default(),
        })
    }

    /// Whether this device uses the shared-memory (mapped) path.
    pub fn shared_memory(&self) -> bool {
        self.shared.shared_memory
    }

    fn check(batch: &PacketBatch) -> Result<(), DeviceError> {
        // Kernels index with these values: refuse anything that would read out of bounds.
        let keys = batch.keys().len() as u32;
        let last = batch.offsets().last().copied().unwrap_or(0) as usize;
        if last != batch.bytes()
            || batch.conns().iter().any(|&c| c >= keys)
            || batch.len() > u32::MAX as usize
        {
            return Err(DeviceError::Other("malformed batch".into()));
        }
        Ok(())
    }

    /// Enqueues the kernel of `app` on `n` packets with the given buffers.
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch(
        &self,
        app: PacketApp,
        n: u32,
        data: &Buffer<u8>,
        offsets: &Buffer<u32>,
        conns: &Buffer<u32>,
        seqs: &Buffer<u32>,
        keys: &Buffer<u8>,
        dpi: &Buffer<DpiResult>,
        md5: &Buffer<u8>,
        wait: &[cl_event],
    ) -> Result<Event, DeviceError> {
        unsafe {
            let mut ek = match app {
                PacketApp::Dpi => {
                    let d = self.shared.dfa_bufs()?;
                    let mut ek = ExecuteKernel::new(&self.k_dpi);
                    ek.set_arg(data)
                        .set_arg(offsets)
                        .set_arg(&n)
                        .set_arg(&d.trans)
                        .set_arg(&d.classes)
                        .set_arg(&self.shared.dfa.match_start())
                        .set_arg(&self.shared.dfa.out_offset())
                        .set_arg(dpi);
                    ek
                }
                PacketApp::Md5 => {
                    let mut ek = ExecuteKernel::new(&self.k_md5);
                    ek.set_arg(data).set_arg(offsets).set_arg(&n).set_arg(md5);
                    ek
                }
                PacketApp::Aes => {
                    let mut ek = ExecuteKernel::new(&self.k_aes);
                    ek.set_arg(data)
                        .set_arg(offsets)
                        .set_arg(&n)
                        .set_arg(conns)
                        .set_arg(seqs)
                        .set_arg(keys);
                    ek
                }
            };
            ek.set_global_work_size(n as usize)
                .set_event_wait_list(wait);
            ek.enqueue_nd_range(&self.compute)
                .map_err(|e| err("kernel launch", e))
        }
    }

    fn prepare_outputs(app: PacketApp, n: usize, out: &mut BatchOutput) {
        match app {
            PacketApp::Dpi => {
                out.dpi.clear();
                out.dpi.resize(n, DpiResult::NONE);
            }
            PacketApp::Md5 => {
                out.md5.clear();
                out.md5.resize(n, [0; 16]);
            }
            PacketApp::Aes => {}
        }
    }

    /// Shared memory: wrap the batch's own memory, run, map the output to make it coherent.
    fn run_shared(
        &mut self,
        app: PacketApp,
        batches: &mut [PacketBatch],
        outs: &mut [BatchOutput],
    ) -> Result<Vec<BatchTiming>, DeviceError> {
        let start = Instant::now();
        let mut timings = Vec::with_capacity(batches.len());
        let ctx = &self.shared.context;
        for (b, o) in batches.iter_mut().zip(outs.iter_mut()) {
            Self::check(b)?;
            let n = b.len();
            Self::prepare_outputs(app, n, o);
            if n > 0 {
                let zero_u8 = [0u8; 16];
                let zero_u32 = [0u32; 1];
                let nonempty_u32 = |s: &[u32]| -> *mut c_void {
                    if s.is_empty() {
                        zero_u32.as_ptr() as *mut c_void
                    } else {
                        s.as_ptr() as *mut c_void
                    }
                };
                let ro = CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR;
                let rw = CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR;
                let keys_flat: Vec<u8> = b.keys().iter().flatten().copied().collect();
                unsafe {
                    let bytes = b.bytes();
                    let data_ptr = if bytes == 0 {
                        zero_u8.as_ptr() as *mut c_void
                    } else {
                        b.data_mut().as_mut_ptr() as *mut c_void
                    };
                    let data = Buffer::<u8>::create(
                        ctx,
                        if app == PacketApp::Aes { rw } else { ro },
                        bytes.max(1),
                        data_ptr,
                    )
                    .map_err(|e| err("buffer", e))?;
                    let offsets = Buffer::<u32>::create(ctx, ro, n + 1, nonempty_u32(b.offsets()))
                        .map_err(|e| err("buffer", e))?;
                    let conns = Buffer::<u32>::create(ctx, ro, n, nonempty_u32(b.conns()))
                        .map_err(|e| err("buffer", e))?;
                    let seqs = Buffer::<u32>::create(ctx, ro, n, nonempty_u32(b.seqs()))
                        .map_err(|e| err("buffer", e))?;
                    let kptr = if keys_flat.is_empty() {
                        zero_u8.as_ptr() as *mut c_void
                    } else {
                        keys_flat.as_ptr() as *mut c_void
                    };
                    let keys = Buffer::<u8>::create(ctx, ro, keys_flat.len().max(16), kptr)
                        .map_err(|e| err("buffer", e))?;
                    let dpi = Buffer::<DpiResult>::create(
                        ctx,
                        rw,
                        n,
                        if app == PacketApp::Dpi {
                            o.dpi.as_mut_ptr() as *mut c_void
                        } else {
                            ptr::null_mut()
                        },
                    )
                    .or_else(|_| {
                        Buffer::<DpiResult>::create(ctx, CL_MEM_READ_WRITE, n, ptr::null_mut())
                    })
                    .map_err(|e| err("buffer", e))?;
                    let md5 = Buffer::<u8>::create(
                        ctx,
                        rw,
                        n * 16,
                        if app == PacketApp::Md5 {
                            o.md5.as_mut_ptr() as *mut c_void
                        } else {
                            ptr::null_mut()
                        },
                    )
                    .or_else(|_| {
                        Buffer::<u8>::create(ctx, CL_MEM_READ_WRITE, n * 16, ptr::null_mut())
                    })
                    .map_err(|e| err("buffer", e))?;
                    let ev = self.launch(
                        app,
                        n as u32,
                        &data,
                        &offsets,
                        &conns,
                        &seqs,
                        &keys,
                        &dpi,
                        &md5,
                        &[],
                    )?;
                    // Mapping the written buffer synchronises the host copy (the kernel's writes become visible).
                    let mut mapped: *mut c_void = ptr::null_mut();
                    let (mem, size) = match app {
                        PacketApp::Dpi => (dpi.get(), n * std::mem::size_of::<DpiResult>()),
                        PacketApp::Md5 => (md5.get(), n * 16),
                        PacketApp::Aes => (data.get(), bytes.max(1)),
                    };
                    let map_ev = cl3_map(&self.compute, mem, size, &mut mapped, &[ev.get()])?;
                    map_ev.wait().map_err(|e| err("map", e))?;
                    // With USE_HOST_PTR the mapped pointer is the host pointer itself, unless the runtime chose a
                    // staging copy; copy back in that case so the result lands in the batch either way.
                    let host: *mut u8 = match app {
                        PacketApp::Dpi => o.dpi.as_mut_ptr() as *mut u8,
                        PacketApp::Md5 => o.md5.as_mut_ptr() as *mut u8,
                        PacketApp::Aes => data_ptr as *mut u8,
                    };
                    if !mapped.is_null()
                        && mapped as *mut u8 != host
                        && !(app == PacketApp::Aes && bytes == 0)
                    {
                        ptr::copy_nonoverlapping(mapped as *const u8, host, size);
                    }
                    let un = self
                        .compute
                        .enqueue_unmap_mem_object(mem, mapped, &[])
                        .map_err(|e| err("unmap", e))?;
                    un.wait().map_err(|e| err("unmap", e))?;
                }
            }
            timings.push(BatchTiming {
                latency: start.elapsed(),
                bytes: b.bytes() as u64,
            });
        }
        Ok(timings)
    }

    /// Discrete: two buffer sets, uploads of batch `i + 1` overlapping the kernel of batch `i`.
    fn run_discrete(
        &mut self,
        app: PacketApp,
        batches: &mut [PacketBatch],
        outs: &mut [BatchOutput],
    ) -> Result<Vec<BatchTiming>, DeviceError> {
        let start = Instant::now();
        let count = batches.len();
        for b in batches.iter() {
            Self::check(b)?;
        }
        for (b, o) in batches.iter().zip(outs.iter_mut()) {
            Self::prepare_outputs(app, b.len(), o);
        }
        let keys_flat: Vec<Vec<u8>> = batches
            .iter()
            .map(|b| b.keys().iter().flatten().copied().collect())
            .collect();
        let mut uploads: Vec<Option<Vec<Event>>> = (0..count).map(|_| None).collect();
        let mut reads: Vec<Vec<Event>> = (0..count).map(|_| Vec::new()).collect();
        let ctx = &self.shared.context;

        // Upload batch `i` into slot `i % 2`, after the kernel that last used the slot.
        let upload_batch = |slots: &mut [Slot; 2],
                            transfer: &CommandQueue,
                            i: usize,
                            b: &PacketBatch,
                            keys: &[u8]|
         -> Result<Vec<Event>, DeviceError> {
            let slot = &mut slots[i % 2];
            slot.ensure(ctx, b.bytes(), b.len(), b.keys().len())?;
            let wait: Vec<cl_event> = slot
                .last_kernel
                .as_ref()
                .map(|e| vec![e.get()])
                .unwrap_or_default();
            let mut evs = Vec::new();
            unsafe {
                if let (Some(d), Some(off), Some(c), Some(s), Some(k)) = (
                    slot.data.as_mut(),
                    slot.offsets.as_mut(),
                    slot.conns.as_mut(),
                    slot.seqs.as_mut(),
                    slot.keys.as_mut(),
                ) {
                    if b.bytes() > 0 {
                        evs.push(
                            transfer
                                .enqueue_write_buffer(d, CL_NON_BLOCKING, 0, b.data(), &wait)
                                .map_err(|e| err("upload", e))?,
                        );
                    }
                    evs.push(
                        transfer
                            .enqueue_write_buffer(off, CL_NON_BLOCKING, 0, b.offsets(), &wait)
                            .map_err(|e| err("upload", e))?,
                    );
                    if !b.is_empty() {
                        evs.push(
                            transfer
                                .enqueue_write_buffer(c, CL_NON_BLOCKING, 0, b.conns(), &wait)
                                .map_err(|e| err("upload", e))?,
                        );
                        evs.push(
                            transfer
                                .enqueue_write_buffer(s, CL_NON_BLOCKING, 0, b.seqs(), &wait)
                                .map_err(|e| err("upload", e))?,
                        );
                    }
                    if !keys.is_empty() {
                        evs.push(
                            transfer
                                .enqueue_write_buffer(k, CL_NON_BLOCKING, 0, keys, &wait)
                                .map_err(|e| err("upload", e))?,
                        );
                    }
                }
            }
            transfer.flush().map_err(|e| err("flush", e))?;
            Ok(evs)
        };

        if count > 0 {
            uploads[0] = Some(upload_batch(
                &mut self.slots,
                &self.transfer,
                0,
                &batches[0],
                &keys_flat[0],
            )?);
        }
        for i in 0..count {
            let n = batches[i].len();
            let wait: Vec<cl_event> = uploads[i]
                .as_ref()
                .map(|v| v.iter().map(|e| e.get()).collect())
                .unwrap_or_default();
            let kernel = if n > 0 {
                let slot = &self.slots[i % 2];
                match (
                    &slot.data,
                    &slot.offsets,
                    &slot.conns,
                    &slot.seqs,
                    &slot.keys,
                    &slot.dpi,
                    &slot.md5,
                ) {
                    (Some(d), Some(off), Some(c), Some(s), Some(k), Some(dp), Some(m)) => {
                        Some(unsafe { self.launch(app, n as u32, d, off, c, s, k, dp, m, &wait)? })
                    }
                    _ => return Err(DeviceError::Other("slot buffers missing".into())),
                }
            } else {
                None
            };
            self.compute.flush().map_err(|e| err("flush", e))?;
            // Overlap: the next upload goes out while this kernel runs.
            if i + 1 < count {
                uploads[i + 1] = Some(upload_batch(
                    &mut self.slots,
                    &self.transfer,
                    i + 1,
                    &batches[i + 1],
                    &keys_flat[i + 1],
                )?);
            }
            if let Some(kev) = kernel {
                let slot = &self.slots[i % 2];
                let kw = [kev.get()];
                unsafe {
                    let ev = match app {
                        PacketApp::Dpi => slot.dpi.as_ref().map(|buf| {
                            self.transfer.enqueue_read_buffer(
                                buf,
                                CL_NON_BLOCKING,
                                0,
                                &mut outs[i].dpi,
                                &kw,
                            )
                        }),
                        PacketApp::Md5 => slot.md5.as_ref().map(|buf| {
                            let flat = std::slice::from_raw_parts_mut(
                                outs[i].md5.as_mut_ptr() as *mut u8,
                                n * 16,
                            );
                            self.transfer
                                .enqueue_read_buffer(buf, CL_NON_BLOCKING, 0, flat, &kw)
                        }),
                        PacketApp::Aes => slot
                            .data
                            .as_ref()
                            .filter(|_| batches[i].bytes() > 0)
                            .map(|buf| {
                                self.transfer.enqueue_read_buffer(
                                    buf,
                                    CL_NON_BLOCKING,
                                    0,
                                    batches[i].data_mut(),
                                    &kw,
                                )
                            }),
                    };
                    if let Some(ev) = ev {
                        reads[i].push(ev.map_err(|e| err("download", e))?);
                    }
                }
                self.slots[i % 2].last_kernel = Some(kev);
            }
            self.transfer.flush().map_err(|e| err("flush", e))?;
        }
        let mut timings = Vec::with_capacity(count);
        for (i, evs) in reads.iter().enumerate() {
            for e in evs {
                e.wait().map_err(|e| err("wait", e))?;
            }
            timings.push(BatchTiming {
                latency: start.elapsed(),
                bytes: batches[i].bytes() as u64,
            });
        }
        self.compute.finish().map_err(|e| err("finish", e))?;
        self.transfer.finish().map_err(|e| err("finish", e))?;
        Ok(timings)
    }
}

/// `clEnqueueMapBuffer` on a raw memory object (opencl3 wants a typed buffer; we have the handle).
unsafe fn cl3_map(
    q: &CommandQueue,
    mem: opencl3::types::cl_mem,
    size: usize,
    out: &mut *mut c_void,
    wait: &[cl_event],
) -> Result<Event, DeviceError> {
    // A typed view over the same cl_mem, not released on drop (ManuallyDrop): the owner releases it.
    let view = std::mem::ManuallyDrop::new(Buffer::<u8>::new(mem));
    let mut p: opencl3::types::cl_mem = ptr::null_mut();
    let ev =
        unsafe { q.enqueue_map_buffer(&view, CL_NON_BLOCKING, CL_MAP_READ, 0, size, &mut p, wait) }
            .map_err(|e| err("map", e))?;
    *out = p;
    Ok(ev)
}

impl Device for OpenClDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn run(
        &mut self,
        app: PacketApp,
        batches: &mut [PacketBatch],
        outs: &mut [BatchOutput],
    ) -> Result<Vec<BatchTiming>, DeviceError> {
        if outs.len() < batches.len() {
            return Err(DeviceError::Other("fewer outputs than batches".into()));
        }
        if self.shared.shared_memory {
            self.run_shared(app, batches, outs)
        } else {
            self.run_discrete(app, batches, outs)
        }
    }

    fn fork(&self) -> Result<Box<dyn Device>, DeviceError> {
        Ok(Box::new(OpenClDevice::open(
            self.info.clone(),
            self.shared.clone(),
        )?))
    }
}

/// Options for [`discover_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DiscoverOptions {
    /// Treat every device as discrete (copies, double-buffered), even those sharing host memory: lets the
    /// discrete path be tested on PoCL.
    pub force_discrete: bool,
}

/// Every OpenCL device on every platform, with the kernels built. The second list explains what is missing
/// (no library, no platform, a device whose build failed): print it, then carry on with what was found.
pub fn discover(dfa: Arc<Dfa>) -> (Vec<OpenClDevice>, Vec<String>) {
    discover_with(dfa, DiscoverOptions::default())
}

/// [`discover`] with options.
pub fn discover_with(dfa: Arc<Dfa>, opts: DiscoverOptions) -> (Vec<OpenClDevice>, Vec<String>) {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let platforms = match get_platforms() {
        Ok(p) if p.is_empty() => {
            notes.push(
                "OpenCL: no platform found (install an ICD such as pocl-opencl-icd); CPU only"
                    .into(),
            );
            return (out, notes);
        }
        Ok(p) => p,
        Err(e) => {
            notes.push(format!(
                "OpenCL: library libOpenCL.so.1 not loadable or no platform ({e}); running on the CPU only"
            ));
            return (out, notes);
        }
    };
    let mut index = 0;
    for p in platforms {
        let pname = p.name().unwrap_or_default();
        let ids = match p.get_devices(CL_DEVICE_TYPE_ALL) {
            Ok(ids) => ids,
            Err(e) => {
                notes.push(format!("OpenCL platform `{pname}`: no devices ({e})"));
                continue;
            }
        };
        for id in ids {
            let device = ClDevice::new(id);
            let name = device.name().unwrap_or_else(|_| "unknown".into());
            let shared_memory =
                !opts.force_discrete && device.host_unified_memory().unwrap_or(false);
            let built = (|| -> Result<OpenClDevice, DeviceError> {
                let context = Context::from_device(&device).map_err(|e| err("context", e))?;
                let program = Program::create_and_build_from_source(&context, SOURCE, "")
                    .map_err(|log| DeviceError::OpenCl(format!("build failed: {log}")))?;
                let info = DeviceInfo {
                    id: format!("ocl{index}"),
                    name: format!("{name} [{pname}]"),
                    kind: DeviceKind::Opencl,
                    memory: if shared_memory {
                        MemoryModel::Shared
                    } else {
                        MemoryModel::Discrete
                    },
                    compute_units: device.max_compute_units().unwrap_or(0),
                };
                let shared = Arc::new(Shared {
                    device,
                    context,
                    program,
                    dfa: dfa.clone(),
                    shared_memory,
                    dfa_bufs: OnceLock::new(),
                });
                OpenClDevice::open(info, shared)
            })();
            match built {
                Ok(d) => out.push(d),
                Err(e) => notes.push(format!("OpenCL device `{name}`: {e}")),
            }
            index += 1;
        }
    }
    (out, notes)
}

impl Shared {
    #[allow(dead_code)]
    fn device(&self) -> &ClDevice {
        &self.device
    }
}
