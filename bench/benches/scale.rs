//! How costs grow: enumeration with devices and plugins (up to 10,000 devices across 10
//! plugins, against the native plugin), MMIO and control calls with threads (1 → 8), NLB0
//! loopback with transfer size (4 KiB → 256 MiB, against memcpy), and 1,000 live instances.
//!
//! `cargo bench -p accelhost-bench --bench scale`

use accelhost_bench::measure;

use std::hint::black_box;
use std::time::{Duration, Instant};

use accelhost::OpenMode;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn enumerate(c: &mut Criterion) {
    let cache = measure::bench_cache_dir();
    let native = measure::NativePlugin::find(None).ok();
    let mut group = c.benchmark_group("enumerate");
    group.sample_size(10);
    for (plugins, ports) in [
        (1usize, 1usize),
        (1, 6),
        (3, 2),
        (1, 100),
        (1, 1000),
        (10, 100),
        (10, 1000),
    ] {
        let devices = plugins * ports;
        let id = format!("{plugins} plugins x {ports}");
        let host = measure::enumeration_host(&cache, plugins, ports).unwrap();
        group.throughput(Throughput::Elements(devices as u64));
        group.bench_function(BenchmarkId::new("accelhost", &id), |b| {
            b.iter(|| black_box(host.enumerate(&[])))
        });
        drop(host);
        if let Some(native) = &native {
            let instances = native.init_plugins(plugins, ports).unwrap();
            group.bench_function(BenchmarkId::new("native", &id), |b| {
                b.iter(|| {
                    for i in &instances {
                        black_box(i.enumerate_with_properties());
                    }
                })
            });
        }
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&cache);
}

fn threads(c: &mut Criterion) {
    let cache = measure::bench_cache_dir();
    let bench = measure::BenchHost::start(&cache).unwrap();
    let handle = bench.host.open(&bench.nlb0, OpenMode::Exclusive).unwrap();
    let mmio = handle.map_mmio(0).unwrap();
    let mut group = c.benchmark_group("threads");
    for threads in [1usize, 2, 4, 8] {
        // Time per operation, all threads together (iters operations split among them).
        let run = |f: &(dyn Fn() + Sync), iters: u64| -> Duration {
            let per = (iters as usize).div_ceil(threads);
            let started = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(|| {
                        for _ in 0..per {
                            f();
                        }
                    });
                }
            });
            started.elapsed()
        };
        group.bench_function(BenchmarkId::new("mmio read64", threads), |b| {
            b.iter_custom(|iters| {
                run(
                    &|| {
                        black_box(mmio.read64(0x8).unwrap());
                    },
                    iters,
                )
            })
        });
        group.bench_function(BenchmarkId::new("reset", threads), |b| {
            b.iter_custom(|iters| run(&|| handle.reset().unwrap(), iters))
        });
    }
    group.finish();
    drop(mmio);

    let mut group = c.benchmark_group("nlb0 transfer size");
    group.sample_size(10);
    for bytes in [4u64 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20] {
        group.throughput(Throughput::Bytes(bytes));
        group.bench_function(BenchmarkId::new("loopback", bytes), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| measure::nlb0_loopback(&handle, bytes).device_time)
                    .sum()
            })
        });
        let memcpy = measure::Memcpy::new(bytes);
        group.bench_function(BenchmarkId::new("memcpy", bytes), |b| {
            b.iter(|| memcpy.copy())
        });
    }
    group.finish();
    handle.close().unwrap();

    // 1,000 live instances: resident memory is printed, not timed.
    let plugin = measure::dfl_plugin_bench(&cache).unwrap();
    let resident = measure::resident_of_started(&plugin, 1000) as f64;
    println!(
        "1000 live plugin instances: {:.1} MiB resident ({:.1} KiB each); allocator: {}",
        resident / f64::from(1 << 20),
        resident / 1024.0 / 1000.0,
        accelhost::instance_allocator()
    );
    drop(bench);
    let _ = std::fs::remove_dir_all(&cache);
}

criterion_group!(benches, enumerate, threads);
criterion_main!(benches);
