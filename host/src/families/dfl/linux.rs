//! The DFL backend over the kernel driver: ports are found through sysfs
//! (`class/fpga_region/regionX/dfl-port.M`), opened as `/dev/dfl-port.M` and driven with the
//! ioctls and `mmap` of [`abi`].

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::abi::{self, PortDmaMapArg, PortDmaUnmapArg, PortInfoArg, PortRegionInfoArg};
use super::{DflDevice, DflPort, PortDesc, PortInfo, PortProbe, RegionInfo};
use crate::attributes::AttributeInfo;
use crate::devices::ioctl::{ioctl_ptr, ioctl_val};
use crate::devices::mmio::MappedMmio;
use crate::devices::sysfs::{
    BadAttribute, numbered, open_node_with, parse_attr, parse_decimal, read_decimal,
    read_dir_if_present, read_hex_u16, read_optional,
};
use crate::devices::{DmaMemory, LinuxRoots, MmioWindow, Owner, OwnerId, check_owner, errno, lock};
use crate::types::Guid;

/// Finds the ports under `<sysfs>/class/fpga_region/region*/dfl-port.M`, in port-number
/// order. No class directory means no ports; a port with unusable attributes is skipped.
pub fn discover_ports(roots: &LinuxRoots) -> io::Result<Vec<LinuxPortDevice>> {
    let class = roots.sysfs.join(abi::SYSFS_FPGA_REGION_CLASS);
    let Some(regions) = read_dir_if_present(&class)? else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for entry in regions {
        let entry = entry?;
        let is_region = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(abi::REGION_DIR_PREFIX));
        if !is_region {
            continue;
        }
        let region = entry.path();
        match scan_region(&region, &roots.dev) {
            Ok(ports) => found.extend(ports),
            Err(err) => tracing::warn!("skipping FPGA region {}: {err}", region.display()),
        }
    }
    found.sort_by_key(|(number, _)| *number);
    let devices = found
        .into_iter()
        .filter_map(|(_, paths)| match read_desc(&paths, Guid::default()) {
            Ok(discovered) => Some(LinuxPortDevice {
                paths,
                discovered,
                regions: AtomicU32::new(0),
            }),
            Err(err) => {
                tracing::warn!("skipping DFL port {}: {err}", paths.port.display());
                None
            }
        })
        .collect();
    Ok(devices)
}

/// Where one port's facts live in sysfs, and the node that opens it.
#[derive(Clone, Debug)]
struct PortPaths {
    region: PathBuf,
    port: PathBuf,
    fme: Option<PathBuf>,
    dev_node: PathBuf,
}

/// The ports of one region, with their numbers; they share the region's lowest-numbered FME.
fn scan_region(region: &Path, dev: &Path) -> io::Result<Vec<(u32, PortPaths)>> {
    let mut ports = Vec::new();
    let mut fme: Option<(u32, String)> = None;
    for entry in fs::read_dir(region)? {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(number) = numbered(name, abi::PORT_DEV_PREFIX) {
            ports.push((number, name.to_owned()));
        } else if let Some(number) = numbered(name, abi::FME_DEV_PREFIX)
            && fme.as_ref().is_none_or(|(lowest, _)| number < *lowest)
        {
            fme = Some((number, name.to_owned()));
        }
    }
    let fme = fme.map(|(_, name)| region.join(name));
    Ok(ports
        .into_iter()
        .map(|(number, name)| {
            let paths = PortPaths {
                region: region.to_path_buf(),
                port: region.join(&name),
                fme: fme.clone(),
                dev_node: dev.join(&name),
            };
            (number, paths)
        })
        .collect())
}

/// Reads the port's facts; `busy_afu_id` stands in for an `afu_id` the kernel refuses with
/// `EBUSY` (the port is in reset).
fn read_desc(paths: &PortPaths, busy_afu_id: Guid) -> Result<PortDesc, BadAttribute> {
    let afu_id_path = paths.port.join(abi::PORT_ATTR_AFU_ID);
    let socket_id = match &paths.fme {
        Some(fme) => read_optional(
            &fme.join(abi::FME_ATTR_SOCKET_ID),
            parse_decimal,
            "a decimal number",
        )?,
        None => None,
    };
    Ok(PortDesc {
        path: paths.dev_node.to_string_lossy().into_owned(),
        port_id: read_decimal(&paths.port.join(abi::PORT_ATTR_ID))?,
        afu_id: afu_id_from(&afu_id_path, fs::read_to_string(&afu_id_path), busy_afu_id)?,
        vendor_id: read_hex_u16(&paths.region.join(abi::REGION_ATTR_VENDOR))?,
        device_id: read_hex_u16(&paths.region.join(abi::REGION_ATTR_DEVICE))?,
        bus_address: fs::read_link(paths.region.join(abi::REGION_DEVICE_LINK))
            .ok()
            .and_then(|target| target.file_name()?.to_str()?.parse().ok()),
        socket_id,
        emulated: false,
    })
}

/// The AFU id from the result of reading `afu_id`; `EBUSY` (port in reset) gives `busy`.
fn afu_id_from(path: &Path, read: io::Result<String>, busy: Guid) -> Result<Guid, BadAttribute> {
    match read {
        Err(err) if err.raw_os_error() == Some(libc::EBUSY) => Ok(busy),
        read => parse_attr(path, read, parse_afu_id, "32 hex digits"),
    }
}

fn parse_afu_id(text: &str) -> Option<Guid> {
    if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let high = u64::from_str_radix(&text[..16], 16).ok()?;
    let low = u64::from_str_radix(&text[16..], 16).ok()?;
    Some(Guid::new(high, low))
}

/// A port the kernel's DFL driver exposes, as [`discover_ports`] found it.
#[derive(Debug)]
pub struct LinuxPortDevice {
    paths: PortPaths,
    discovered: PortDesc,
    /// The MMIO regions the last probe that could open the port counted.
    regions: AtomicU32,
}

impl DflDevice for LinuxPortDevice {
    fn desc(&self) -> PortDesc {
        read_desc(&self.paths, self.discovered.afu_id).unwrap_or_else(|err| {
            tracing::debug!("DFL port: using the facts found at discovery: {err}");
            self.discovered.clone()
        })
    }

    fn open(&self, exclusive: bool, owner: &Owner) -> io::Result<Box<dyn DflPort>> {
        let fd = open_node(&self.paths.dev_node, exclusive)?;
        Ok(Box::new(LinuxPort::new(fd, owner.id)))
    }

    fn probe(&self, owner: &Owner) -> PortProbe {
        match self.open(false, owner) {
            Ok(port) => {
                let regions = port.info().map_or(0, |info| info.num_regions);
                self.regions.store(regions, Ordering::Relaxed);
                PortProbe {
                    assigned: false,
                    num_regions: regions,
                }
            }
            Err(_) => PortProbe {
                assigned: true,
                num_regions: self.regions.load(Ordering::Relaxed),
            },
        }
    }

    fn attributes(&self) -> io::Result<Vec<AttributeInfo>> {
        let mut found = Vec::new();
        list_files(&self.paths.port, "", 0, &mut found)?;
        if let Some(fme) = &self.paths.fme {
            list_files(fme, "fme/", 0, &mut found)?;
        }
        found.truncate(crate::attributes::MAX_ATTRIBUTES);
        Ok(found)
    }

    fn read_attribute(&self, name: &str) -> io::Result<String> {
        let path = self.attribute_path(name)?;
        let mut text = Vec::new();
        fs::File::open(path)?
            .take(crate::attributes::MAX_VALUE as u64)
            .read_to_end(&mut text)?;
        let text = String::from_utf8_lossy(&text);
        Ok(text.strip_suffix('\n').unwrap_or(&text).to_string())
    }

    fn write_attribute(&self, name: &str, value: &str) -> io::Result<()> {
        let path = self.attribute_path(name)?;
        fs::OpenOptions::new()
            .write(true)
            .open(path)?
            .write_all(value.as_bytes())
    }
}

/// How deep the attribute tree goes below a port or FME (`fme/hwmon/hwmon0/temp1_input`).
const MAX_ATTRIBUTE_DEPTH: usize = 3;

/// Lists the regular files below `dir` as attributes named `prefix` + their relative path;
/// symbolic links (`device`, `subsystem`, `driver`) are not followed.
fn list_files(
    dir: &Path,
    prefix: &str,
    depth: usize,
    found: &mut Vec<AttributeInfo>,
) -> io::Result<()> {
    let mut entries: Vec<_> = fs::read_dir(dir)?.collect::<io::Result<_>>()?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let kind = entry.file_type()?;
        let full = format!("{prefix}{name}");
        if crate::attributes::check_name(&full).is_err() {
            continue;
        }
        if kind.is_file() {
            let mode = entry.metadata()?.permissions().mode();
            found.push(AttributeInfo {
                name: full,
                writable: mode & 0o200 != 0,
            });
        } else if kind.is_dir() && depth < MAX_ATTRIBUTE_DEPTH {
            list_files(&entry.path(), &format!("{full}/"), depth + 1, found)?;
        }
    }
    Ok(())
}

impl LinuxPortDevice {
    /// The file of attribute `name` (a checked relative path): below the port's directory,
    /// or the FME's for `fme/...`, reached without following a symbolic link.
    fn attribute_path(&self, name: &str) -> io::Result<PathBuf> {
        let (mut path, rest) = match name.strip_prefix("fme/") {
            Some(rest) => (
                self.paths.fme.clone().ok_or_else(|| errno(libc::ENOENT))?,
                rest,
            ),
            None => (self.paths.port.clone(), name),
        };
        for segment in rest.split('/') {
            path.push(segment);
            if fs::symlink_metadata(&path)?.file_type().is_symlink() {
                return Err(errno(libc::ENOENT));
            }
        }
        if !fs::metadata(&path)?.is_file() {
            return Err(errno(libc::EISDIR));
        }
        Ok(path)
    }
}

/// Opens a port node as OPAE does: read-write, close-on-exec, `O_EXCL` for exclusive use.
fn open_node(path: &Path, exclusive: bool) -> io::Result<OwnedFd> {
    open_node_with(path, if exclusive { libc::O_EXCL } else { 0 })
}

/// An open `/dev/dfl-port.M`. Dropping it unmaps its windows and closes the fd, on which the
/// kernel resets the AFU and unpins every DMA mapping.
pub struct LinuxPort {
    // Declared before `mappings`: the fd closes (unpinning the pages) before the memory the
    // table keeps alive can be freed.
    fd: OwnedFd,
    owner: OwnerId,
    mappings: Mutex<BTreeMap<u64, Arc<DmaMemory>>>,
    windows: Mutex<Vec<Weak<MappedMmio>>>,
}

impl LinuxPort {
    fn new(fd: OwnedFd, owner: OwnerId) -> Self {
        LinuxPort {
            fd,
            owner,
            mappings: Mutex::new(BTreeMap::new()),
            windows: Mutex::new(Vec::new()),
        }
    }
}

fn argsz<T>() -> u32 {
    size_of::<T>() as u32
}

fn port_info_arg() -> PortInfoArg {
    PortInfoArg {
        argsz: argsz::<PortInfoArg>(),
        ..Default::default()
    }
}

fn region_info_arg(index: u32) -> PortRegionInfoArg {
    PortRegionInfoArg {
        argsz: argsz::<PortRegionInfoArg>(),
        index,
        ..Default::default()
    }
}

fn dma_map_arg(memory: &DmaMemory) -> PortDmaMapArg {
    PortDmaMapArg {
        argsz: argsz::<PortDmaMapArg>(),
        flags: 0,
        user_addr: memory.user_address(),
        length: memory.len(),
        iova: 0,
    }
}

fn dma_unmap_arg(iova: u64) -> PortDmaUnmapArg {
    PortDmaUnmapArg {
        argsz: argsz::<PortDmaUnmapArg>(),
        flags: 0,
        iova,
    }
}

impl DflPort for LinuxPort {
    fn info(&self) -> io::Result<PortInfo> {
        let mut arg = port_info_arg();
        // SAFETY: GET_INFO reads and writes one `PortInfoArg`, which `arg` is.
        unsafe {
            ioctl_ptr(
                self.fd.as_fd(),
                abi::native::DFL_FPGA_PORT_GET_INFO,
                &mut arg,
            )
        }?;
        Ok(PortInfo {
            flags: arg.flags,
            num_regions: arg.num_regions,
            num_umsgs: arg.num_umsgs,
        })
    }

    fn region_info(&self, index: u32) -> io::Result<RegionInfo> {
        let mut arg = region_info_arg(index);
        // SAFETY: GET_REGION_INFO reads and writes one `PortRegionInfoArg`, which `arg` is.
        unsafe {
            ioctl_ptr(
                self.fd.as_fd(),
                abi::native::DFL_FPGA_PORT_GET_REGION_INFO,
                &mut arg,
            )
        }?;
        Ok(RegionInfo {
            index,
            flags: arg.flags,
            size: arg.size,
            offset: arg.offset,
        })
    }

    fn map_region(&self, index: u32) -> io::Result<Arc<dyn MmioWindow>> {
        let region = self.region_info(index)?;
        if region.flags & abi::REGION_MMAP == 0 {
            return Err(errno(libc::EINVAL));
        }
        let window = Arc::new(MappedMmio::map(
            self.fd.as_fd(),
            region.size,
            region.offset,
        )?);
        let mut windows = lock(&self.windows);
        windows.retain(|w| w.strong_count() > 0);
        windows.push(Arc::downgrade(&window));
        Ok(window)
    }

    fn dma_map(&self, memory: &Arc<DmaMemory>) -> io::Result<u64> {
        check_owner(memory, self.owner)?;
        let mut arg = dma_map_arg(memory);
        // Held across the ioctl so the table and the kernel agree on which IOVAs are live.
        let mut mappings = lock(&self.mappings);
        // SAFETY: DMA_MAP reads and writes one `PortDmaMapArg`. The pages it pins belong to
        // `memory`, which the table keeps alive until the mapping is gone.
        unsafe {
            ioctl_ptr(
                self.fd.as_fd(),
                abi::native::DFL_FPGA_PORT_DMA_MAP,
                &mut arg,
            )
        }?;
        memory.set_io_address(Some(arg.iova));
        mappings.insert(arg.iova, memory.clone());
        Ok(arg.iova)
    }

    fn dma_unmap(&self, iova: u64) -> io::Result<()> {
        let mut arg = dma_unmap_arg(iova);
        let mut mappings = lock(&self.mappings);
        // SAFETY: DMA_UNMAP reads one `PortDmaUnmapArg`, which `arg` is.
        unsafe {
            ioctl_ptr(
                self.fd.as_fd(),
                abi::native::DFL_FPGA_PORT_DMA_UNMAP,
                &mut arg,
            )
        }?;
        if let Some(memory) = mappings.remove(&iova) {
            memory.set_io_address(None);
        }
        Ok(())
    }

    fn reset(&self) -> io::Result<()> {
        ioctl_val(self.fd.as_fd(), abi::native::DFL_FPGA_PORT_RESET, 0).map(drop)
    }
}

impl Drop for LinuxPort {
    fn drop(&mut self) {
        // A live mapping would hold the file open and delay the kernel's release (reset and
        // unpin) past our close, so the windows go first.
        let windows = self
            .windows
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        for window in windows.drain(..).filter_map(|w| w.upgrade()) {
            window.revoke();
        }
        let mappings = self
            .mappings
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        for memory in mappings.values() {
            memory.set_io_address(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{Budget, BudgetKind};
    use std::os::unix::fs::symlink;

    const NLB0_TEXT: &str = "d8424dc4a4a3c413f89e433683f9040b\n";

    use crate::devices::scratch::Scratch;

    /// Two cards: region0 (0000:5e:00.0, FME on socket 1, ports 0 and 10) and region1
    /// (0000:af:00.0 without an FME, port 1 and port 2 whose afu_id is malformed).
    fn fake_sysfs() -> Scratch {
        let s = Scratch::new("dfl-sysfs");
        let class = "sys/class/fpga_region";
        for (pci, vendor, device) in [
            ("0000:5e:00.0", "0x8086\n", "0x0b30\n"),
            ("0000:af:00.0", "0x8086\n", "0xbcc0\n"),
        ] {
            s.write(&format!("sys/devices/{pci}/vendor"), vendor);
            s.write(&format!("sys/devices/{pci}/device"), device);
        }
        s.write(&format!("{class}/region0/dfl-fme.0/socket_id"), "1\n");
        s.write(&format!("{class}/region0/dfl-port.0/id"), "0\n");
        s.write(&format!("{class}/region0/dfl-port.0/afu_id"), NLB0_TEXT);
        s.write(&format!("{class}/region0/dfl-port.10/id"), "10\n");
        s.write(
            &format!("{class}/region0/dfl-port.10/afu_id"),
            "00000000000000010000000000000002\n",
        );
        s.write(&format!("{class}/region0/compat_id"), "0\n");
        s.write(&format!("{class}/region1/dfl-port.1/id"), "1\n");
        s.write(&format!("{class}/region1/dfl-port.1/afu_id"), NLB0_TEXT);
        s.write(&format!("{class}/region1/dfl-port.2/id"), "2\n");
        s.write(
            &format!("{class}/region1/dfl-port.2/afu_id"),
            "not-a-guid\n",
        );
        s.write(&format!("{class}/region1/dfl-portal/id"), "3\n");
        s.write(&format!("{class}/not-a-region/dfl-port.9/id"), "9\n");
        symlink(
            "../../../devices/0000:5e:00.0",
            s.0.join(class).join("region0/device"),
        )
        .unwrap();
        symlink(
            "../../../devices/0000:af:00.0",
            s.0.join(class).join("region1/device"),
        )
        .unwrap();
        s
    }

    #[test]
    fn discovery_reads_every_well_formed_port_in_order() {
        let s = fake_sysfs();
        let ports = discover_ports(&s.roots()).unwrap();
        let descs: Vec<PortDesc> = ports.iter().map(|p| p.desc()).collect();
        let ids: Vec<u32> = descs.iter().map(|d| d.port_id).collect();
        assert_eq!(ids, [0, 1, 10], "port 2 (bad afu_id) is skipped");
        let dev = s.0.join("dev");
        assert_eq!(descs[0].path, dev.join("dfl-port.0").to_string_lossy());
        assert_eq!(descs[0].afu_id, abi::nlb0::AFU_ID);
        assert_eq!((descs[0].vendor_id, descs[0].device_id), (0x8086, 0x0B30));
        assert_eq!(descs[0].bus_address, Some("0000:5e:00.0".parse().unwrap()));
        assert_eq!(descs[0].socket_id, Some(1));
        assert!(!descs[0].emulated);
        assert_eq!(descs[1].device_id, 0xBCC0);
        assert_eq!(descs[1].bus_address, Some("0000:af:00.0".parse().unwrap()));
        assert_eq!(descs[1].socket_id, None);
        assert_eq!(descs[2].afu_id, Guid::new(1, 2));
        assert_eq!(descs[2].socket_id, Some(1));
    }

    #[test]
    fn attributes_are_the_files_below_the_port_and_its_fme() {
        let s = fake_sysfs();
        let class = "sys/class/fpga_region/region0";
        s.write(&format!("{class}/dfl-port.0/errors/errors"), "0x0\n");
        s.write(
            &format!("{class}/dfl-fme.0/hwmon/hwmon3/temp1_input"),
            "41000\n",
        );
        symlink("/etc", s.0.join(class).join("dfl-port.0/driver")).unwrap();
        let ports = discover_ports(&s.roots()).unwrap();
        let port0 = &ports[0];
        let names: Vec<String> = port0
            .attributes()
            .unwrap()
            .into_iter()
            .map(|a| a.name)
            .collect();
        assert_eq!(
            names,
            [
                "afu_id",
                "errors/errors",
                "id",
                "fme/hwmon/hwmon3/temp1_input",
                "fme/socket_id"
            ],
            "symbolic links are not followed"
        );
        assert_eq!(port0.read_attribute("errors/errors").unwrap(), "0x0");
        assert_eq!(port0.read_attribute("fme/socket_id").unwrap(), "1");
        port0.write_attribute("errors/errors", "0x0").unwrap();
        for (name, errno) in [
            ("driver/passwd", libc::ENOENT),
            ("errors", libc::EISDIR),
            ("nope", libc::ENOENT),
        ] {
            let err = port0.read_attribute(name).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(errno), "{name}");
        }
        // region1 has no FME: its ports have no `fme/` attributes.
        let port1 = &ports[1];
        let err = port1.read_attribute("fme/socket_id").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    }

    #[test]
    fn default_roots_give_dev_paths() {
        let s = fake_sysfs();
        let roots = LinuxRoots {
            sysfs: s.0.join("sys"),
            dev: LinuxRoots::default().dev,
        };
        let ports = discover_ports(&roots).unwrap();
        assert_eq!(ports[0].desc().path, "/dev/dfl-port.0");
    }

    #[test]
    fn desc_rereads_sysfs_and_falls_back_to_discovery() {
        let s = fake_sysfs();
        let ports = discover_ports(&s.roots()).unwrap();
        let port0 = "sys/class/fpga_region/region0/dfl-port.0";
        s.write(
            &format!("{port0}/afu_id"),
            "0000000000000003000000000000000f\n",
        );
        assert_eq!(ports[0].desc().afu_id, Guid::new(3, 15));
        fs::remove_dir_all(s.0.join(port0)).unwrap();
        assert_eq!(ports[0].desc().afu_id, abi::nlb0::AFU_ID);
        assert_eq!(ports[0].desc().port_id, 0);
    }

    #[test]
    fn missing_class_dir_means_no_ports() {
        let s = Scratch::new("dfl-empty");
        assert!(discover_ports(&s.roots()).unwrap().is_empty());
    }

    #[test]
    fn afu_id_in_reset_is_reported_as_the_fallback() {
        let path = Path::new("afu_id");
        let busy = Err(io::Error::from_raw_os_error(libc::EBUSY));
        assert_eq!(
            afu_id_from(path, busy, Guid::default()).unwrap(),
            Guid::default()
        );
        let other = Err(io::Error::from_raw_os_error(libc::EIO));
        assert!(afu_id_from(path, other, Guid::default()).is_err());
        let err = afu_id_from(
            path,
            Ok("D8424DC4-A4A3-C413-F89E-433683F9040B\n".into()),
            Guid::default(),
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("afu_id: "), "{err}");
        assert_eq!(
            afu_id_from(path, Ok(NLB0_TEXT.to_uppercase()), Guid::default()).unwrap(),
            abi::nlb0::AFU_ID
        );
    }

    #[test]
    fn opening_a_missing_node_returns_enoent() {
        let s = fake_sysfs();
        let ports = discover_ports(&s.roots()).unwrap();
        for exclusive in [false, true] {
            let err = ports[0].open(exclusive, &Owner::unlimited()).err().unwrap();
            assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        }
    }

    #[test]
    fn ioctls_on_a_non_dfl_node_fail_with_the_kernels_errno() {
        let s = fake_sysfs();
        s.write("dev/dfl-port.0", "");
        let ports = discover_ports(&s.roots()).unwrap();
        let port = ports[0].open(true, &Owner::unlimited()).unwrap();
        let enotty = Some(libc::ENOTTY);
        assert_eq!(port.info().unwrap_err().raw_os_error(), enotty);
        assert_eq!(port.region_info(0).unwrap_err().raw_os_error(), enotty);
        assert_eq!(port.map_region(0).err().unwrap().raw_os_error(), enotty);
        assert_eq!(port.reset().unwrap_err().raw_os_error(), enotty);
        assert_eq!(port.dma_unmap(0x1000).unwrap_err().raw_os_error(), enotty);
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let theirs = DmaMemory::allocate(4096, OwnerId::fresh(), &budget, false).unwrap();
        assert_eq!(
            port.dma_map(&theirs).unwrap_err().raw_os_error(),
            Some(libc::EFAULT)
        );
    }

    #[test]
    fn argument_structs_are_filled_as_the_kernel_expects() {
        assert_eq!(
            port_info_arg(),
            PortInfoArg {
                argsz: 16,
                ..Default::default()
            }
        );
        assert_eq!(
            region_info_arg(1),
            PortRegionInfoArg {
                argsz: 32,
                flags: 0,
                index: 1,
                padding: 0,
                size: 0,
                offset: 0
            }
        );
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let memory = DmaMemory::allocate(8192, OwnerId::fresh(), &budget, false).unwrap();
        assert_eq!(
            dma_map_arg(&memory),
            PortDmaMapArg {
                argsz: 32,
                flags: 0,
                user_addr: memory.user_address(),
                length: 8192,
                iova: 0
            }
        );
        assert_eq!(
            dma_unmap_arg(0xABC000),
            PortDmaUnmapArg {
                argsz: 16,
                flags: 0,
                iova: 0xABC000
            }
        );
    }

    #[test]
    fn dropping_the_port_unmaps_its_windows_and_clears_io_addresses() {
        let s = Scratch::new("dfl-drop");
        let path = s.0.join("node");
        fs::write(&path, vec![0u8; 4096]).unwrap();
        let owner = OwnerId::fresh();
        let port = LinuxPort::new(open_node(&path, false).unwrap(), owner);
        let window = Arc::new(MappedMmio::map(port.fd.as_fd(), 4096, 0).unwrap());
        lock(&port.windows).push(Arc::downgrade(&window));
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let memory = DmaMemory::allocate(4096, owner, &budget, false).unwrap();
        memory.set_io_address(Some(0x2000));
        lock(&port.mappings).insert(0x2000, memory.clone());
        window.write32(0, 1).unwrap();
        drop(port);
        assert_eq!(
            window.read32(0).unwrap_err().raw_os_error(),
            Some(libc::ENODEV)
        );
        assert_eq!(memory.io_address(), None);
        assert_eq!(
            Arc::strong_count(&memory),
            1,
            "the table let go of the memory"
        );
    }

    #[test]
    fn everything_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<LinuxPortDevice>();
        check::<LinuxPort>();
        check::<MappedMmio>();
    }
}
