//! The xocl backend over XRT's kernel driver: user PFs are found through sysfs
//! (`bus/pci/devices/<BDF>` with a `drm/renderD<N>` child), opened as `/dev/dri/renderD<N>`
//! and driven with the ioctls and `mmap` of [`abi`] (the XRT >= 2.15 numbering).

mod bo;
mod client;
mod layout;
mod worker;

use std::io;
use std::path::{Path, PathBuf};

use crate::devices::sysfs::{
    BadAttribute, numbered, open_node, read_dir_if_present, read_hex_u16, read_text,
};
use crate::devices::{LinuxRoots, Owner};
use crate::families::xocl::abi;
use crate::families::xocl::{DeviceDesc, XoclClient, XoclDevice};
use crate::types::BusAddress;
use layout::read_loaded;

pub use client::LinuxXoclClient;

/// Finds the xocl user PFs under `<sysfs>/bus/pci/devices`, in bus-address order: Xilinx
/// functions with a `drm/renderD<N>` child whose `ready` attribute is not `0`. No PCI
/// directory means no devices; a function with unusable attributes is skipped.
pub fn discover_devices(roots: &LinuxRoots) -> io::Result<Vec<LinuxXoclDevice>> {
    let Some(functions) = read_dir_if_present(&roots.sysfs.join(abi::SYSFS_PCI_DEVICES))? else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for entry in functions {
        let function = entry?.path();
        match probe_function(&function, &roots.dev) {
            Ok(Some(device)) => found.push(device),
            Ok(None) => {}
            Err(err) => tracing::warn!("skipping PCI function {}: {err}", function.display()),
        }
    }
    found.sort_by_key(|device| device.discovered.bus_address);
    Ok(found)
}

/// The device behind one PCI function directory, `None` if it is not a usable xocl user PF.
fn probe_function(function: &Path, dev: &Path) -> Result<Option<LinuxXoclDevice>, BadAttribute> {
    let vendor_id = read_hex_u16(&function.join("vendor"))?;
    if vendor_id != abi::PCI_VENDOR_XILINX {
        return Ok(None);
    }
    let Some(render) = render_node(function)? else {
        tracing::debug!(
            "Xilinx PCI function {} has no render node (a management PF?)",
            function.display()
        );
        return Ok(None);
    };
    let ready = read_text(&function.join(abi::USER_ATTR_READY));
    if ready.is_ok_and(|text| text == "0") {
        tracing::debug!(
            "skipping xocl device {}: its `ready` attribute is 0",
            function.display()
        );
        return Ok(None);
    }
    let device_id = read_hex_u16(&function.join("device"))?;
    let bus_address: BusAddress = function
        .file_name()
        .and_then(|name| name.to_str()?.parse().ok())
        .ok_or_else(|| BadAttribute::new(function, "the directory name is not a PCI address"))?;
    let board_name = read_text(&function.join(abi::USER_ATTR_BOARD_NAME))
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    let loaded = read_loaded(function).unwrap_or_else(|err| {
        tracing::warn!("xocl device {bus_address}: taking no xclbin as loaded: {err}");
        None
    });
    let node = dev.join(abi::DEV_DRI_DIR).join(&render);
    Ok(Some(LinuxXoclDevice {
        function: function.to_path_buf(),
        discovered: DeviceDesc {
            path: node.to_string_lossy().into_owned(),
            vendor_id,
            device_id,
            bus_address: Some(bus_address),
            board_name,
            loaded,
            emulated: false,
        },
        node,
    }))
}

/// The lowest-numbered `renderD<N>` entry of the function's `drm` directory, if any.
fn render_node(function: &Path) -> Result<Option<String>, BadAttribute> {
    let drm = function.join(abi::SYSFS_DRM_DIR);
    let Some(entries) = read_dir_if_present(&drm).map_err(|err| BadAttribute::new(&drm, err))?
    else {
        return Ok(None);
    };
    let mut lowest: Option<(u32, String)> = None;
    for entry in entries {
        let name = entry
            .map_err(|err| BadAttribute::new(&drm, err))?
            .file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(number) = render_number(name)
            && lowest.as_ref().is_none_or(|(n, _)| number < *n)
        {
            lowest = Some((number, name.to_owned()));
        }
    }
    Ok(lowest.map(|(_, name)| name))
}

/// `N` of `renderD<N>` when `N` is all decimal digits.
fn render_number(name: &str) -> Option<u32> {
    numbered(name, abi::RENDER_NODE_PREFIX)
}

/// An xocl user PF the kernel driver exposes, as [`discover_devices`] found it.
#[derive(Debug)]
pub struct LinuxXoclDevice {
    function: PathBuf,
    node: PathBuf,
    discovered: DeviceDesc,
}

impl XoclDevice for LinuxXoclDevice {
    fn desc(&self) -> DeviceDesc {
        let mut desc = self.discovered.clone();
        match read_loaded(&self.function) {
            Ok(loaded) => desc.loaded = loaded,
            Err(err) => tracing::debug!("xocl device: using the uuid found at discovery: {err}"),
        }
        desc
    }

    fn open(&self, owner: &Owner) -> io::Result<Box<dyn XoclClient>> {
        let fd = open_node(&self.node)?;
        let client = LinuxXoclClient::new(fd, owner, Some(self.function.clone()))?;
        Ok(Box::new(client))
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::io;
    use std::os::unix::fs::symlink;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::client::*;
    use super::layout::*;
    use super::worker::*;
    use super::*;
    use crate::devices::sysfs::open_node;
    use crate::devices::{
        Budget, Completion, CompletionState, DmaMemory, LinuxRoots, Owner, OwnerId, lock,
    };
    use crate::families::xocl::abi::{self, ErtHeader, ErtOpcode, ErtState, StartCu};
    use crate::families::xocl::xclbin::{XclbinBuilder, parse};
    use crate::families::xocl::{Command, DeviceDesc, SyncDirection, XoclClient, XoclDevice};
    use crate::types::Guid;

    const UUID: Guid = Guid::new(0xBD3A_1BD2_4C6E_4F0E, 0x9A0C_1E25_7F2D_0A11);
    const UUID_TEXT: &str = "bd3a1bd2-4c6e-4f0e-9a0c-1e257f2d0a11\n";
    const ENOTTY_TEXT: &str = "os error 25";

    use crate::devices::BudgetKind;
    use crate::devices::scratch::Scratch;

    const U200: &str = "sys/devices/pci0000:64/0000:65:00.1";
    const PCI: &str = "sys/bus/pci/devices";

    /// A U200 user PF (renderD128, as a symlink like real sysfs) and its management PF, a
    /// U250 user PF that is not ready, a non-Xilinx function with a render node, a function
    /// with a malformed vendor file, and a U50 user PF with the fewest attributes.
    fn fake_sysfs() -> Scratch {
        let s = Scratch::new("xocl-sysfs");
        s.write(&format!("{U200}/vendor"), "0x10ee\n");
        s.write(&format!("{U200}/device"), "0x5001\n");
        s.write(
            &format!("{U200}/board_name"),
            "xilinx_u200_gen3x16_xdma_base_2\n",
        );
        s.write(&format!("{U200}/xclbinuuid"), UUID_TEXT);
        s.write(&format!("{U200}/ready"), "1\n");
        s.mkdir(&format!("{U200}/drm/renderD128"));
        s.mkdir(&format!("{U200}/drm/card0"));
        s.mkdir(PCI);
        symlink(
            "../../../devices/pci0000:64/0000:65:00.1",
            s.0.join(PCI).join("0000:65:00.1"),
        )
        .unwrap();
        s.write(&format!("{PCI}/0000:65:00.0/vendor"), "0x10ee\n");
        s.write(&format!("{PCI}/0000:65:00.0/device"), "0x5000\n");

        s.write(&format!("{PCI}/0000:17:00.1/vendor"), "0x10ee\n");
        s.write(&format!("{PCI}/0000:17:00.1/device"), "0x5005\n");
        s.write(&format!("{PCI}/0000:17:00.1/ready"), "0\n");
        s.mkdir(&format!("{PCI}/0000:17:00.1/drm/renderD129"));

        s.write(&format!("{PCI}/0000:3b:00.0/vendor"), "0x1002\n");
        s.write(&format!("{PCI}/0000:3b:00.0/device"), "0x73bf\n");
        s.mkdir(&format!("{PCI}/0000:3b:00.0/drm/renderD130"));

        s.write(&format!("{PCI}/0000:af:00.1/vendor"), "10ee\n");
        s.write(&format!("{PCI}/0000:af:00.1/device"), "0x5001\n");
        s.mkdir(&format!("{PCI}/0000:af:00.1/drm/renderD131"));

        s.write(&format!("{PCI}/0000:d8:00.1/vendor"), "0x10EE\n");
        s.write(&format!("{PCI}/0000:d8:00.1/device"), "0x5021\n");
        s.write(
            &format!("{PCI}/0000:d8:00.1/xclbinuuid"),
            "00000000-0000-0000-0000-000000000000\n",
        );
        s.mkdir(&format!("{PCI}/0000:d8:00.1/drm/renderD132"));
        s
    }

    #[test]
    fn discovery_finds_the_ready_xilinx_user_pfs_in_order() {
        let s = fake_sysfs();
        let devices = discover_devices(&s.roots()).unwrap();
        let descs: Vec<DeviceDesc> = devices.iter().map(|d| d.desc()).collect();
        let dri = s.0.join("dev/dri");
        assert_eq!(
            descs,
            [
                DeviceDesc {
                    path: dri.join("renderD128").to_string_lossy().into_owned(),
                    vendor_id: 0x10EE,
                    device_id: 0x5001,
                    bus_address: Some("0000:65:00.1".parse().unwrap()),
                    board_name: "xilinx_u200_gen3x16_xdma_base_2".into(),
                    loaded: Some(UUID),
                    emulated: false,
                },
                DeviceDesc {
                    path: dri.join("renderD132").to_string_lossy().into_owned(),
                    vendor_id: 0x10EE,
                    device_id: 0x5021,
                    bus_address: Some("0000:d8:00.1".parse().unwrap()),
                    board_name: "unknown".into(),
                    loaded: None,
                    emulated: false,
                },
            ]
        );
    }

    #[test]
    fn default_roots_give_dev_dri_paths() {
        let s = fake_sysfs();
        let roots = LinuxRoots {
            sysfs: s.0.join("sys"),
            dev: LinuxRoots::default().dev,
        };
        let devices = discover_devices(&roots).unwrap();
        assert_eq!(devices[0].desc().path, "/dev/dri/renderD128");
    }

    #[test]
    fn desc_rereads_the_loaded_uuid() {
        let s = fake_sysfs();
        let devices = discover_devices(&s.roots()).unwrap();
        let attr = format!("{U200}/xclbinuuid");
        s.write(&attr, "0000000000000003000000000000000f\n");
        assert_eq!(devices[0].desc().loaded, Some(Guid::new(3, 15)));
        s.write(&attr, "\n");
        assert_eq!(devices[0].desc().loaded, None);
        s.write(&attr, "not a uuid\n");
        assert_eq!(
            devices[0].desc().loaded,
            Some(UUID),
            "falls back to discovery"
        );
        fs::remove_file(s.0.join(&attr)).unwrap();
        assert_eq!(devices[0].desc().loaded, None);
    }

    #[test]
    fn a_malformed_uuid_at_discovery_means_none_loaded() {
        let s = fake_sysfs();
        s.write(&format!("{U200}/xclbinuuid"), "xyz\n");
        let devices = discover_devices(&s.roots()).unwrap();
        assert_eq!(devices.len(), 2);
        assert_eq!(devices[0].desc().loaded, None);
    }

    #[test]
    fn missing_bus_dir_means_no_devices() {
        let s = Scratch::new("xocl-empty");
        assert!(discover_devices(&s.roots()).unwrap().is_empty());
    }

    #[test]
    fn attribute_parsers_are_strict() {
        assert_eq!(render_number("renderD128"), Some(128));
        for bad in ["renderD", "renderD+1", "renderDx", "card0", "controlD64"] {
            assert_eq!(render_number(bad), None, "{bad}");
        }
        for none in ["", "0", "00000000-0000-0000-0000-000000000000"] {
            assert_eq!(parse_xclbinuuid(none), Some(None), "{none:?}");
        }
        assert_eq!(parse_xclbinuuid(UUID_TEXT.trim()), Some(Some(UUID)));
        assert_eq!(
            parse_xclbinuuid("BD3A1BD24C6E4F0E9A0C1E257F2D0A11"),
            Some(Some(UUID))
        );
        for bad in ["bd3a1bd2", "zz3a1bd2-4c6e-4f0e-9a0c-1e257f2d0a11", "1"] {
            assert_eq!(parse_xclbinuuid(bad), None, "{bad}");
        }
    }

    #[test]
    fn opening_a_missing_node_returns_enoent() {
        let s = fake_sysfs();
        let devices = discover_devices(&s.roots()).unwrap();
        let err = devices[0].open(&Owner::unlimited()).err().unwrap();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    }

    /// The fake tree with a regular file as renderD128, and a client on it.
    fn client_on_a_file() -> (Scratch, LinuxXoclClient, Arc<Budget>) {
        let s = fake_sysfs();
        s.write("dev/dri/renderD128", "");
        let owner = Owner::new(1 << 20, 1 << 20);
        let fd = open_node(&s.0.join("dev/dri/renderD128")).unwrap();
        let client =
            LinuxXoclClient::new(fd, &owner, Some(s.0.join(PCI).join("0000:65:00.1"))).unwrap();
        (s, client, owner.dma)
    }

    /// Puts a BO with `bytes` of host memory in the client's table, as `create_bo` would.
    fn fake_bo(client: &LinuxXoclClient, handle: u32, bytes: u64) {
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let memory = DmaMemory::allocate(bytes, OwnerId::fresh(), &budget, false).unwrap();
        lock(&client.bos).insert(handle, memory);
    }

    fn vadd_packet() -> Vec<u32> {
        StartCu {
            cu_masks: vec![1],
            regmap: abi::vadd::regmap(0x1000, 0x2000, 0x3000, 16),
        }
        .encode()
    }

    fn sync(bo: u32, offset: u64, size: u64) -> Command {
        Command::Sync {
            bo,
            direction: SyncDirection::ToDevice,
            offset,
            size,
        }
    }

    fn wait(done: &Completion) -> CompletionState {
        done.wait(Instant::now() + Duration::from_secs(10))
    }

    fn failed_with(state: CompletionState, needles: &[&str]) {
        let CompletionState::Failed(why) = state else {
            panic!("expected a failure, got {state:?}");
        };
        for needle in needles {
            assert!(why.contains(needle), "{why:?} lacks {needle:?}");
        }
    }

    #[test]
    fn the_device_opens_its_node() {
        let s = fake_sysfs();
        s.write("dev/dri/renderD128", "");
        let devices = discover_devices(&s.roots()).unwrap();
        let client = devices[0].open(&Owner::new(1 << 20, 1 << 20)).unwrap();
        assert_eq!(
            client.reset().unwrap_err().raw_os_error(),
            Some(libc::ENOTTY)
        );
    }

    #[test]
    fn ioctls_on_a_regular_file_fail_with_enotty() {
        let (_s, client, budget) = client_on_a_file();
        let enotty = Some(libc::ENOTTY);
        let image = XclbinBuilder::vadd(UUID, 1, 1).build();
        let parsed = parse(&image).unwrap();
        let err = client.load_xclbin(&image, &parsed).unwrap_err();
        assert_eq!(err.raw_os_error(), enotty);
        assert!(client.loaded_xclbin().is_none());
        let err = client.open_context(UUID, 0, true).unwrap_err();
        assert_eq!(err.raw_os_error(), enotty);
        let err = client.close_context(UUID, 0).unwrap_err();
        assert_eq!(err.raw_os_error(), enotty);
        for bank in [Some(0), None] {
            let err = client.create_bo(4096, bank).unwrap_err();
            assert_eq!(err.raw_os_error(), enotty);
        }
        assert_eq!(budget.used(), 0);
        assert_eq!(client.reset().unwrap_err().raw_os_error(), enotty);

        fake_bo(&client, 7, 8192);
        assert_eq!(client.free_bo(7).unwrap_err().raw_os_error(), enotty);
        assert!(
            lock(&client.bos).contains_key(&7),
            "kept after a failed close"
        );

        let exec = client.submit(Command::Exec(vadd_packet()), vec![]).unwrap();
        failed_with(wait(&exec), &["creating the exec BO failed", ENOTTY_TEXT]);
        let synced = client.submit(sync(7, 0, 8192), vec![]).unwrap();
        failed_with(wait(&synced), &["SYNC_BO failed", ENOTTY_TEXT]);
        let copy = Command::Copy {
            dst: 7,
            dst_offset: 4096,
            src: 7,
            src_offset: 0,
            size: 4096,
        };
        let copied = client.submit(copy, vec![]).unwrap();
        failed_with(wait(&copied), &["COPY_BO failed", ENOTTY_TEXT]);
    }

    #[test]
    fn submit_checks_commands_before_queueing_them() {
        let (_s, client, _budget) = client_on_a_file();
        let kind = |command: Command| client.submit(command, vec![]).unwrap_err().kind();
        let errno_of =
            |command: Command| client.submit(command, vec![]).unwrap_err().raw_os_error();
        fake_bo(&client, 3, 4096);
        assert_eq!(errno_of(sync(4, 0, 1)), Some(libc::ENOENT));
        assert_eq!(kind(sync(3, 4000, 100)), io::ErrorKind::InvalidInput);
        assert_eq!(kind(sync(3, u64::MAX, 2)), io::ErrorKind::InvalidInput);
        let copy = |dst, src, size| Command::Copy {
            dst,
            dst_offset: 0,
            src,
            src_offset: 0,
            size,
        };
        assert_eq!(errno_of(copy(3, 4, 16)), Some(libc::ENOENT));
        assert_eq!(errno_of(copy(4, 3, 16)), Some(libc::ENOENT));
        assert_eq!(kind(copy(3, 3, 8192)), io::ErrorKind::InvalidInput);

        assert_eq!(kind(Command::Exec(vec![])), io::ErrorKind::InvalidInput);
        let mut no_cu = vadd_packet();
        no_cu[1] = 0;
        let err = client.submit(Command::Exec(no_cu), vec![]).unwrap_err();
        assert!(err.to_string().contains("bad ERT packet"), "{err}");
        let key_val = ErtHeader {
            state: 1,
            custom: 0,
            count: 2,
            opcode: ErtOpcode::StartKeyVal as u8,
            kind: 3,
        };
        let err = client
            .submit(Command::Exec(vec![key_val.encode(), 1, 0x10]), vec![])
            .unwrap_err();
        assert!(err.to_string().contains("opcode 15"), "{err}");
        let configure = ErtHeader {
            state: 1,
            custom: 0,
            count: 2,
            opcode: ErtOpcode::Configure as u8,
            kind: 2,
        }
        .encode();
        assert_eq!(
            kind(Command::Exec(vec![configure, 0])),
            io::ErrorKind::InvalidInput
        );
        let passed = client
            .submit(Command::Exec(vec![configure, 0, 0]), vec![])
            .unwrap();
        failed_with(wait(&passed), &["exec BO", ENOTTY_TEXT]);
        let huge = StartCu {
            cu_masks: vec![1],
            regmap: vec![0; 1024],
        }
        .encode();
        let err = client.submit(Command::Exec(huge), vec![]).unwrap_err();
        assert!(err.to_string().contains("at most 1024 words"), "{err}");

        let deps = (0..=abi::MAX_DEPENT_CMD_BO)
            .map(|_| Arc::new(Completion::default()))
            .collect();
        let err = client.submit(sync(3, 0, 1), deps).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn commands_run_in_order_once_their_dependencies_finish() {
        let (_s, client, _budget) = client_on_a_file();
        fake_bo(&client, 1, 4096);
        let gate = Arc::new(Completion::default());
        let first = client.submit(sync(1, 0, 4096), vec![gate.clone()]).unwrap();
        let second = client.submit(sync(1, 0, 4096), vec![]).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(!first.is_finished(), "waits for its dependency");
        assert!(!second.is_finished(), "waits behind the first");
        gate.finish(CompletionState::Complete);
        failed_with(wait(&first), &["SYNC_BO failed"]);
        failed_with(wait(&second), &["SYNC_BO failed"]);

        let pending = Arc::new(Completion::default());
        let broken = Arc::new(Completion::with_state(CompletionState::Failed(
            "boom".into(),
        )));
        let doomed = client
            .submit(sync(1, 0, 4096), vec![pending.clone(), broken])
            .unwrap();
        failed_with(wait(&doomed), &["a dependency failed: boom"]);
        let late = Arc::new(Completion::default());
        let after_late = client.submit(sync(1, 0, 1), vec![late.clone()]).unwrap();
        late.finish(CompletionState::Failed("late".into()));
        failed_with(wait(&after_late), &["a dependency failed: late"]);
    }

    #[test]
    fn dropping_the_client_fails_what_has_not_started() {
        let (_s, client, _budget) = client_on_a_file();
        fake_bo(&client, 1, 4096);
        let gate = Arc::new(Completion::default());
        let blocked = client.submit(sync(1, 0, 4096), vec![gate.clone()]).unwrap();
        let behind = client.submit(sync(1, 0, 4096), vec![]).unwrap();
        let shared = Arc::downgrade(&client.shared);
        drop(client);
        assert_eq!(
            blocked.state(),
            CompletionState::Failed(CLIENT_CLOSED.into())
        );
        assert_eq!(
            behind.state(),
            CompletionState::Failed(CLIENT_CLOSED.into())
        );
        assert_eq!(
            shared.strong_count(),
            0,
            "the worker ended and the fd closed"
        );
        gate.finish(CompletionState::Complete);
    }

    #[test]
    fn closing_the_client_wakes_a_waiting_worker() {
        let (_s, client, _budget) = client_on_a_file();
        let shared = client.shared.clone();
        assert!(
            wait_for_event(&shared).unwrap(),
            "a regular file always reports an event"
        );
        drop(client);
        assert!(!wait_for_event(&shared).unwrap(), "the close is seen first");
    }

    #[test]
    fn loaded_xclbin_follows_the_card() {
        let (s, client, _budget) = client_on_a_file();
        let image = XclbinBuilder::vadd(UUID, 1, 1).build();
        *lock(&client.loaded) = Some(Arc::new(parse(&image).unwrap()));
        assert_eq!(client.loaded_xclbin().unwrap().xclbin.uuid, UUID);
        let attr = format!("{U200}/xclbinuuid");
        s.write(&attr, "0000000000000003000000000000000f\n");
        assert!(
            client.loaded_xclbin().is_none(),
            "another xclbin replaced it"
        );
        fs::remove_file(s.0.join(&attr)).unwrap();
        assert_eq!(
            client.loaded_xclbin().unwrap().xclbin.uuid,
            UUID,
            "unknown: ours"
        );
    }

    #[test]
    fn hot_reset_without_root_says_so() {
        for code in [libc::EPERM, libc::EACCES] {
            let err = reset_error(io::Error::from_raw_os_error(code));
            assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
            assert!(err.to_string().contains("only root"), "{err}");
        }
        let err = reset_error(io::Error::from_raw_os_error(libc::ENOTTY));
        assert_eq!(err.raw_os_error(), Some(libc::ENOTTY));
    }

    #[test]
    fn exec_packets_are_written_with_state_new() {
        let mut words = vadd_packet();
        words[0] = (words[0] & !0xF) | ErtState::Completed as u32;
        let bytes = exec_packet(&words);
        assert_eq!(bytes.len(), words.len() * 4);
        let back: Vec<u32> = bytes
            .as_chunks::<4>()
            .0
            .iter()
            .map(|c| u32::from_ne_bytes(*c))
            .collect();
        assert_eq!(back[0], 0x3000_F001);
        assert_eq!(back[1..], words[1..]);
        assert_eq!(exec_outcome(back[0]), None);
    }

    #[test]
    fn everything_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<LinuxXoclDevice>();
        check::<LinuxXoclClient>();
    }

    #[test]
    fn exec_bo_headers_decode_to_outcomes() {
        let rest = 0x3000_F000;
        for pending in 0..4 {
            assert_eq!(exec_outcome(rest | pending), None, "{pending}");
        }
        assert_eq!(exec_outcome(rest | 4), Some(CompletionState::Complete));
        for (raw, state) in [
            (5, "Error"),
            (6, "Abort"),
            (7, "Submitted"),
            (8, "Timeout"),
            (9, "NoResponse"),
            (10, "SkError"),
            (11, "SkCrashed"),
        ] {
            failed_with(
                exec_outcome(rest | raw).unwrap(),
                &[&format!("state {state} ({raw})")],
            );
        }
        failed_with(exec_outcome(rest | 12).unwrap(), &["unknown state 12"]);
    }
}
