//! Every OpenCL device found (PoCL's CPU device here) against the CPU reference, bit for bit, on both memory
//! paths (mapped shared memory, and the double-buffered discrete path forced on the same device). Skips with a
//! message when no OpenCL library or platform is present.
#![cfg(feature = "opencl")]

use std::sync::Arc;

use flowbundle_hetero::device::{CpuDevice, Device};
use flowbundle_hetero::opencl::{DiscoverOptions, discover_with};
use flowbundle_hetero::profiler::make_batch;
use flowbundle_hetero::{BatchOutput, Dfa, DfaLimits, PacketApp, PacketBatch, payload};

fn batches(payloads: &[Vec<u8>]) -> Vec<PacketBatch> {
    // Several shapes: odd sizes (AES tails, MD5 one- and two-block padding), empty payloads, a big batch.
    let mut odd: Vec<Vec<u8>> = (0..200)
        .map(|i| payloads[i % payloads.len()][..(i * 7) % 1500].to_vec())
        .collect();
    odd.push(Vec::new());
    vec![
        make_batch(&odd, odd.len(), 0),
        make_batch(payloads, 700, 3),
        make_batch(payloads, 1, 5),
        PacketBatch::default(),
    ]
}

#[test]
fn opencl_devices_match_the_cpu_reference() {
    let Some(hex) = flowbundle_testsupport::data("rules/content-10k.hex") else {
        return;
    };
    let Some(corpus) = flowbundle_testsupport::data(payload::CORPUS_DIRS[0]) else {
        return;
    };
    let payloads = payload::real_payloads(&flowbundle_testsupport::data_root(), 1500, 64);
    assert!(
        !payloads.is_empty(),
        "no payload under {}",
        corpus.display()
    );
    let dfa = Arc::new(Dfa::from_file(&hex, DfaLimits::default()).unwrap().0);
    let mut cpu = CpuDevice::new(2, dfa.clone()).unwrap();
    for force_discrete in [false, true] {
        let (mut devs, notes) = discover_with(dfa.clone(), DiscoverOptions { force_discrete });
        for n in &notes {
            eprintln!("{n}");
        }
        if devs.is_empty() {
            flowbundle_testsupport::missing_tool(
                "an OpenCL platform with a device (pocl-opencl-icd)",
            );
            return;
        }
        for dev in &mut devs {
            eprintln!("testing {:?} (force_discrete {force_discrete})", dev.info());
            for app in PacketApp::ALL {
                let mut want = batches(&payloads);
                let mut got = want.clone();
                let mut wo = vec![BatchOutput::default(); want.len()];
                let mut go = vec![BatchOutput::default(); got.len()];
                cpu.run(app, &mut want, &mut wo).unwrap();
                let t = dev.run(app, &mut got, &mut go).unwrap();
                assert_eq!(t.len(), got.len());
                for i in 0..want.len() {
                    assert_eq!(go[i], wo[i], "{app} batch {i} on {}", dev.info().id);
                    assert_eq!(
                        got[i].data(),
                        want[i].data(),
                        "{app} payloads of batch {i} on {}",
                        dev.info().id
                    );
                }
                if app == PacketApp::Dpi {
                    assert!(
                        wo[1].dpi.iter().any(|r| r.count > 0),
                        "real payload should match some patterns"
                    );
                }
            }
            // A co-running handle on the same device works too.
            let mut fork = dev.fork().unwrap();
            let mut b = vec![make_batch(&payloads, 64, 0)];
            let mut o = vec![BatchOutput::default()];
            fork.run(PacketApp::Md5, &mut b, &mut o).unwrap();
            assert_eq!(o[0].md5.len(), 64);
        }
    }
}
