//! Control-plane costs against their baselines, in the same run: queries that never enter
//! wasm, control calls that do (open, close, reset), MMIO on a mapped region, instantiation
//! and plugin start. Baselines: the native plugin (a cdylib behind a function-pointer table),
//! a raw wasmtime component call, a direct call into the emulator, a trivial `ioctl`.
//!
//! `cargo build --profile bench -p accelhost-native-plugin && cargo bench -p accelhost-bench --bench control`

use accelhost_bench::measure;

use std::hint::black_box;
use std::time::Duration;

use accelhost::OpenMode;
use criterion::{Criterion, criterion_group, criterion_main};

fn control(c: &mut Criterion) {
    let cache = measure::bench_cache_dir();
    let native = match measure::NativePlugin::find(None) {
        Ok(native) => Some(native),
        Err(why) => {
            eprintln!("note: {why}; native baselines skipped");
            None
        }
    };
    let native_one = native
        .as_ref()
        .map(|n| n.init(&measure::native_config(0, 1)).expect("native init"));

    let mut floor = c.benchmark_group("floor");
    let mut raw = measure::RawComponent::new().expect("raw component");
    floor.bench_function("raw component call", |b| {
        b.iter(|| black_box(raw.call(black_box(7))))
    });
    let direct = measure::DirectEmulator::open();
    floor.bench_function("emulator read64", |b| {
        b.iter(|| black_box(direct.window.read64(black_box(0x8)).unwrap()))
    });
    floor.bench_function("emulator write64", |b| {
        b.iter(|| direct.window.write64(black_box(0x100), 5).unwrap())
    });
    let ioctl = measure::Ioctl::on_a_pipe();
    floor.bench_function("ioctl FIONREAD", |b| b.iter(|| black_box(ioctl.call())));
    floor.finish();

    let bench = measure::BenchHost::start(&cache).expect("host");
    let host = &bench.host;
    let token = &bench.nlb0;
    let mut group = c.benchmark_group("accelhost");
    group.bench_function("properties", |b| {
        b.iter(|| {
            let p = black_box(token).properties();
            black_box((p.guid, p.vendor_id, p.device_id))
        })
    });
    group.bench_function("open+close", |b| {
        b.iter(|| {
            host.open(token, OpenMode::Exclusive)
                .unwrap()
                .close()
                .unwrap()
        })
    });
    let handle = host.open(token, OpenMode::Exclusive).unwrap();
    group.bench_function("reset", |b| b.iter(|| handle.reset().unwrap()));
    let mmio = handle.map_mmio(0).unwrap();
    group.bench_function("mmio read64", |b| {
        b.iter(|| black_box(mmio.read64(black_box(0x8)).unwrap()))
    });
    group.bench_function("mmio write64", |b| {
        b.iter(|| mmio.write64(black_box(0x100), 5).unwrap())
    });
    drop(mmio);
    handle.close().unwrap();
    let plugin = measure::dfl_plugin_bench(&cache).expect("plugin bench");
    group.finish();

    // The same exports straight through wasmtime's bindings (no manager).
    let mut floor = c.benchmark_group("floor");
    let mut raw_plugin = plugin.raw().expect("raw plugin");
    floor.bench_function("raw wasmtime reset", |b| b.iter(|| raw_plugin.reset()));
    raw_plugin.close_first();
    floor.bench_function("raw wasmtime open+close", |b| {
        b.iter(|| {
            let h = raw_plugin.open();
            raw_plugin.close(h)
        })
    });
    drop(raw_plugin);
    floor.finish();

    let mut group = c.benchmark_group("accelhost");
    group.bench_function("instantiate", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| measure::time_instantiate(&plugin)).sum())
    });
    group.bench_function("plugin start from disk cache", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| measure::time_start_from_disk(&plugin))
                .sum()
        })
    });
    group.finish();

    if let (Some(n), Some(native)) = (&native_one, &native) {
        let mut group = c.benchmark_group("native");
        group.bench_function("properties", |b| {
            b.iter(|| black_box(n.properties(black_box(0))))
        });
        group.bench_function("open+close", |b| {
            b.iter(|| {
                let h = n.open(0);
                n.close(h)
            })
        });
        let h = n.open(0);
        group.bench_function("reset", |b| b.iter(|| n.reset(h)));
        let region = n.map_mmio(h);
        group.bench_function("mmio read64", |b| {
            b.iter(|| black_box(region.read64(black_box(0x8))))
        });
        group.bench_function("mmio write64", |b| {
            b.iter(|| region.write64(black_box(0x100), 5))
        });
        drop(region);
        n.close(h);
        let mut copies = 0;
        group.bench_function("dlopen + init", |b| {
            b.iter_custom(|iters| {
                let mut total = 0.0;
                for _ in 0..iters {
                    copies += 1;
                    total += measure::native_start_ns(&native.path, copies);
                }
                Duration::from_nanos(total as u64)
            })
        });
        group.finish();
    }
    drop(bench);
    let _ = std::fs::remove_dir_all(&cache);
}

criterion_group!(benches, control);
criterion_main!(benches);
