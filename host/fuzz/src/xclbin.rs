//! `xclbin`: [`xclbin::parse`] on arbitrary bytes. When an image parses, every accessor runs
//! over it, and the promises `parse` makes about a valid image are checked: the length is the
//! file size, compute units are few enough, uniquely named and described in the metadata,
//! every connection names an existing IP, bank and argument, and arguments sit word-aligned
//! in the argument area.

use std::collections::HashSet;

use accelhost::families::xocl::abi::{ARGS_BASE, MAX_CUS};
use accelhost::families::xocl::xclbin::{self, IpKind, MemKind, Xclbin};

/// Parses `data`; checks and walks the image if it is valid.
pub fn run(data: &[u8]) {
    let parsed = xclbin::parse(data);
    if data.starts_with(xclbin::MAGIC) {
        assert_eq!(
            accelhost::builtin::check_image(data).is_ok(),
            parsed.is_ok(),
            "the host's image check and the xclbin parser disagree"
        );
    }
    match parsed {
        Ok(image) => walk(&image, data.len()),
        Err(err) => {
            let _ = err.to_string();
        }
    }
}

fn walk(image: &Xclbin, file_len: usize) {
    assert_eq!(
        image.length, file_len as u64,
        "m_length is not the file size"
    );
    for (index, bank) in image.banks.iter().enumerate() {
        assert_eq!(
            bank.index as usize, index,
            "bank indices follow MEM_TOPOLOGY"
        );
        assert_eq!(MemKind::from_raw(bank.kind.raw()), bank.kind);
        let _ = bank.kind.is_streaming();
        assert!(
            bank.base.checked_add(bank.size).is_some(),
            "bank {index} ends past 2^64"
        );
    }
    for ip in &image.ips {
        assert_eq!(IpKind::from_raw(ip.kind.raw()), ip.kind);
        let _ = (ip.kernel_name(), ip.instance_name());
    }

    let cus = image.compute_units();
    assert!(
        cus.len() <= MAX_CUS as usize,
        "more CUs than the driver indexes"
    );
    let mut names = HashSet::new();
    for cu in &cus {
        assert_eq!(cu.kind, IpKind::Kernel);
        assert!(names.insert(cu.name.as_str()), "CU '{}' twice", cu.name);
        let kernel = image
            .kernel(cu.kernel_name())
            .unwrap_or_else(|| panic!("CU '{}' has no kernel metadata", cu.name));
        assert!(image.cus_of(&kernel.name).len() <= cus.len());
    }

    for kernel in &image.kernels {
        for arg in &kernel.args {
            assert!(
                u64::from(arg.offset) >= ARGS_BASE && arg.offset % 4 == 0,
                "kernel '{}' argument '{}' at {:#x}",
                kernel.name,
                arg.name,
                arg.offset
            );
        }
        let _ = image.cus_of(&kernel.name);
    }

    for connection in &image.connectivity {
        let ip = image
            .ips
            .get(connection.ip_index as usize)
            .expect("a connection names an existing IP");
        assert!(image.bank(connection.bank_index).is_some());
        if ip.kind == IpKind::Kernel {
            let kernel = image.kernel(ip.kernel_name()).expect("checked above");
            assert!(
                kernel.args.iter().any(|a| a.index == connection.arg_index),
                "a connection names argument {} that '{}' does not have",
                connection.arg_index,
                kernel.name
            );
        }
    }

    for (cu_index, cu) in (0u32..).zip(&cus) {
        let args = image
            .kernel(cu.kernel_name())
            .map_or(0, |k| k.args.len() as u32);
        for arg_index in 0..=args {
            if let Some(bank) = image.arg_bank(cu_index, arg_index) {
                assert!(image.bank(bank).is_some(), "arg_bank names a missing bank");
            }
        }
    }
    assert_eq!(image.arg_bank(cus.len() as u32, 0), None);
    assert!(image.bank(image.banks.len() as u32).is_none());
}
