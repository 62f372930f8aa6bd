//! Data-plane workloads against native baselines, in the same run: NLB0 loopback of 64 MiB
//! against `memcpy` of the same bytes, vadd of 16 Mi elements on the xocl emulator against a
//! native single-threaded loop (host↔device copies included), and tiny launches on one queue.
//!
//! `cargo bench -p accelhost-bench --bench data`

use accelhost_bench::measure;

use std::time::Duration;

use accelhost::OpenMode;
use accelhost::workloads::vadd;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn data(c: &mut Criterion) {
    let cache = measure::bench_cache_dir();
    let bench = measure::BenchHost::start(&cache).expect("host");
    let bytes = 64u64 << 20;

    let mut group = c.benchmark_group("nlb0 64 MiB");
    group.sample_size(10).throughput(Throughput::Bytes(bytes));
    let memcpy = measure::Memcpy::new(bytes);
    group.bench_function("memcpy", |b| b.iter(|| memcpy.copy()));
    drop(memcpy);
    let handle = bench.host.open(&bench.nlb0, OpenMode::Exclusive).unwrap();
    group.bench_function("loopback (device time)", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| measure::nlb0_loopback(&handle, bytes).device_time)
                .sum()
        })
    });
    group.finish();
    handle.close().unwrap();

    let elements = 16u32 << 20;
    let xocl = bench.host.open(&bench.xocl, OpenMode::Exclusive).unwrap();
    let kernel = measure::vadd_kernel(&xocl);
    let mut group = c.benchmark_group("vadd 16 Mi");
    group
        .sample_size(10)
        .throughput(Throughput::Bytes(3 * 4 * u64::from(elements)));
    let mut native = measure::NativeVadd::new(elements as usize);
    group.bench_function("native loop", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| Duration::from_secs_f64(native.run()))
                .sum()
        })
    });
    drop(native);
    group.bench_function("xocl emulator", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let report = vadd::run(&xocl, &kernel, elements).unwrap();
                    assert!(report.verified());
                    report.elapsed
                })
                .sum()
        })
    });
    group.finish();

    let mut group = c.benchmark_group("tiny launches");
    // Each launch from its enqueue to its completion, as the p50 of `accelhost bench`; the
    // buffers and the queue are set up outside the clock.
    group.bench_function("launch + wait", |b| {
        b.iter_custom(|iters| {
            let latencies = measure::tiny_launch_latencies(&xocl, &kernel, iters as usize).unwrap();
            Duration::from_nanos(latencies.iter().sum::<f64>() as u64)
        })
    });
    group.bench_function("pipelined (per launch)", |b| {
        b.iter_custom(|iters| {
            vadd::tiny_launches(&xocl, &kernel, iters.max(1) as u32)
                .unwrap()
                .elapsed
        })
    });
    group.finish();
    drop(kernel);
    xocl.close().unwrap();
    drop(bench);
    let _ = std::fs::remove_dir_all(&cache);
}

criterion_group!(benches, data);
criterion_main!(benches);
